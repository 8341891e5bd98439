// Jobs recorded by the code before job types moved into `jobs/<type>/` (commit 3b5adf8, with
// test/fixtures/pre-move/record.ts.txt). Their histories took branches the lifecycle's
// `patched()` markers guarded; those markers are retired (job workflows are pinned to the build
// that started them, workers/versioning.ts), so such a run finishes on its own build and today's
// bundle must refuse to replay it rather than silently take another path (docs/deploying.md:
// upgrading from an unversioned deployment drains it first). A dead letter recorded then must
// still replay now, reusing the effect it already made: that is data, not history.
import { readFile } from 'node:fs/promises';
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operatorKey, startHarness, workflowBundle, type Harness } from '../support/harness.js';

interface Recorded {
  ids: Record<'summarize' | 'purchase' | 'transcribe', string>;
  histories: Record<string, { workflowId: string; history: string }>;
  evidence: Record<'job_intents' | 'effects' | 'dead_letters' | 'dead_letter_actions', Array<Record<string, unknown>>>;
}
const recorded: Recorded = JSON.parse(await readFile(new URL('../fixtures/pre-move/recorded-3b5adf8.json', import.meta.url), 'utf8'));

let h: Harness;
beforeAll(async () => {
  h = await startHarness('pre-move');
});
afterAll(async () => {
  await h?.close();
});

describe('jobs recorded before the job-type move', () => {
  it('no longer replay on the new bundle: the retired patches make it a determinism error, not another path', async () => {
    const bundle = await workflowBundle();
    for (const [type, r] of Object.entries(recorded.histories)) {
      const history = proto.temporal.api.history.v1.History.decode(Buffer.from(r.history, 'base64'));
      const started = history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name;
      expect(started, type).toBe(`${type}Job`);
      await expect(Worker.runReplayHistory({ workflowBundle: bundle }, history, r.workflowId), type).rejects.toThrow(/nondeterminism/i);
    }
  });

  it('replay a dead letter recorded then, reusing its charge and executing only its receipt', async () => {
    for (const table of ['job_intents', 'effects', 'dead_letters', 'dead_letter_actions'] as const) {
      for (const row of recorded.evidence[table]) {
        // The intent points to its dead letter, which points back: link it once both exist.
        const cols = Object.keys(row).filter(
          (c) => !(table === 'dead_letter_actions' && c === 'id') && !(table === 'job_intents' && c === 'dead_letter_id'),
        );
        const list = cols.map((c) => `"${c}"`).join(', ');
        await h.pool.query(`INSERT INTO ${table} (${list}) SELECT ${list} FROM jsonb_populate_record(NULL::${table}, $1::jsonb)`, [
          JSON.stringify(row),
        ]);
      }
    }
    const jobId = recorded.ids.purchase;
    const dl = recorded.evidence.dead_letters[0]!;
    await h.pool.query('UPDATE job_intents SET dead_letter_id = $2 WHERE job_id = $1', [jobId, dl.id]);
    const admin = (path: string, body?: unknown) =>
      h.api(path, { method: body ? 'POST' : 'GET', body, tenant: null, headers: { authorization: `Bearer ${operatorKey('erin')}` } });
    const dry = await admin('/v1/dead-letters/replay', { ids: [dl.id], dryRun: true });
    expect(dry.body.deadLetters[0].effects).toEqual([
      expect.objectContaining({ step: 'charge', effectKey: `${jobId}:charge`, action: 'reuse' }),
      expect.objectContaining({ step: 'receipt', effectKey: `${jobId}:receipt`, action: 'execute', state: 'failed' }),
    ]);
    const replay = await admin('/v1/dead-letters/replay', { ids: [dl.id] });
    expect(replay.status).toBe(202);
    const done = await h.waitForReplay(replay.body.replayId);
    expect(done.counts.succeeded).toBe(1);
    const job = (await h.api(`/v1/jobs/${jobId}-replay-1`)).body;
    expect(job).toMatchObject({
      status: 'succeeded',
      replayOf: jobId,
      result: { chargeId: recorded.evidence.effects.find((e) => e.step === 'charge')!.provider_id },
    });
    const ledger = (await h.simEffects()).byKey;
    expect(ledger[`${jobId}:charge`]).toBeUndefined(); // reused from Postgres: never sent again
    expect(ledger[`${jobId}:receipt`]).toMatchObject({ applied: 1 });
  });
});
