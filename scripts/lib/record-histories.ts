/**
 * The replay safety net's recorder: after a real run (the test suite, with
 * `DJ_RECORD_HISTORIES=<dir>`), one completed history of every workflow type the run saw is
 * written to `<dir>/<workflowType>.json`, unless that type already has one (a fixture is kept
 * from the code that recorded it: replaying old histories on new code is the point; set
 * `DJ_RECORD_HISTORIES_REFRESH=1` to replace them). `test/integration/replay.all-workflow-types.test.ts`
 * replays them all on the current bundle and fails for a workflow type without one.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';

export interface RecordedHistory {
  workflowType: string;
  workflowId: string;
  recordedAt: string;
  /** The commit of the code that ran it. */
  commit: string;
  /** `temporal.api.history.v1.History`, protobuf, base64. */
  history: string;
}

function commit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

export async function recordHistories(o: {
  address: string;
  namespace: string;
  dir: string;
  refresh?: boolean;
  log: (m: string) => void;
}): Promise<string[]> {
  const connection = await Connection.connect({ address: o.address });
  const written: string[] = [];
  try {
    const client = new Client({ connection, namespace: o.namespace });
    const seen = new Set<string>();
    await mkdir(o.dir, { recursive: true });
    for await (const wf of client.workflow.list({ query: "ExecutionStatus = 'Completed'" })) {
      if (seen.has(wf.type)) continue;
      seen.add(wf.type);
      const file = path.join(o.dir, `${wf.type}.json`);
      if (!o.refresh && existsSync(file)) continue;
      const history = await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
      const record: RecordedHistory = {
        workflowType: wf.type,
        workflowId: wf.workflowId,
        recordedAt: new Date().toISOString(),
        commit: commit(),
        history: Buffer.from(proto.temporal.api.history.v1.History.encode(history).finish()).toString('base64'),
      };
      await writeFile(file, `${JSON.stringify(record, null, 2)}\n`);
      written.push(wf.type);
    }
    o.log(
      `recorded ${written.length} workflow histories into ${o.dir}${written.length ? `: ${written.sort().join(', ')}` : ''} (saw ${[...seen].sort().join(', ') || 'none'})`,
    );
    return written;
  } finally {
    await connection.close();
  }
}
