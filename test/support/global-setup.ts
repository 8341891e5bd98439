// vitest globalSetup: one Postgres and one Temporal dev server for the whole run, shared by all
// test files through `inject(...)` (see provided.d.ts). Existing services are used when
// DATABASE_URL / TEMPORAL_ADDRESS are set.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startDevServer, type DevServer } from '../../scripts/lib/dev-server.ts';
import { startEmbeddedPostgres, type EmbeddedPg } from '../../scripts/lib/embedded-pg.ts';
import { resolveTemporalCli } from '../../scripts/lib/temporal-cli.ts';
import { isAlive } from '../../scripts/lib/child-cleanup.ts';
import {
  defaultPorts,
  resolveTemporalServerBinaries,
  startTemporalServer,
  type TemporalServer,
} from '../../scripts/lib/temporal-server.ts';
import { temporalServerEnv } from '../../scripts/lib/temporal-server-env.ts';
import { recordHistories } from '../../scripts/lib/record-histories.ts';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started = Date.now();
  // Library messages are kept until setup is done (printed only if it fails); afterwards they
  // are unexpected events (a server exiting) and printed at once.
  const pending: string[] = [];
  let ready = false;
  const quiet = (msg: string): void => {
    if (ready) console.error(`[global-setup] ${msg}`);
    else pending.push(msg);
  };
  // CLI resolution prints its progress live (a first `go install` takes minutes).
  const live = (msg: string): void => {
    if (msg.startsWith('Temporal CLI: ')) pending.push(msg);
    else console.log(`[global-setup] ${msg}`);
  };

  const namespace = process.env.TEMPORAL_NAMESPACE || 'default';
  const externalTemporal = process.env.TEMPORAL_ADDRESS || undefined;
  const externalDb = process.env.DATABASE_URL || undefined;

  let pg: EmbeddedPg | undefined;
  let pgParent: string | undefined;
  let temporal: DevServer | undefined;
  // TEMPORAL_MODE=server: temporal-server on the suite's Postgres instead of the dev server.
  const temporalEnv = temporalServerEnv(process.env);
  let server: TemporalServer | undefined;
  let serverDir: string | undefined;

  let recordFrom: string | undefined;
  const teardown = async (): Promise<void> => {
    ready = false;
    // `npm run histories:record`: before the server goes, one history of each workflow type it ran.
    const dir = process.env.DJ_RECORD_HISTORIES;
    if (dir && recordFrom) {
      await recordHistories({
        address: recordFrom,
        namespace,
        dir: path.resolve(dir),
        refresh: process.env.DJ_RECORD_HISTORIES_REFRESH === '1',
        log: (m) => console.log(`[global-setup] ${m}`),
      }).catch((err: Error) => console.error(`[global-setup] recording histories failed: ${err.message}`));
    }
    await Promise.allSettled([temporal?.stop(), server?.stop()]);
    await pg?.stop();
    if (pgParent) await fs.rm(pgParent, { recursive: true, force: true });
    if (serverDir) await fs.rm(serverDir, { recursive: true, force: true });
  };

  try {
    const cliPath = await resolveTemporalCli({
      cliPath: process.env.TEMPORAL_CLI_PATH,
      log: live,
      // With an external server or temporal-server the CLI is optional: do not build it just for tests.
      allowGoInstall: externalTemporal === undefined && temporalEnv.mode !== 'server',
    });

    const startPg = async (): Promise<string> => {
      if (externalDb) return externalDb;
      await sweepStaleDataDirs(quiet);
      pgParent = await fs.mkdtemp(path.join(os.tmpdir(), PG_PREFIX));
      // Postgres runs as the `postgres` user when we are root: it must traverse this directory.
      await fs.chmod(pgParent, 0o755);
      pg = await startEmbeddedPostgres({ dataDir: path.join(pgParent, 'data'), port: 0, persistent: false, log: quiet });
      return pg.url;
    };
    const startTemporal = async (): Promise<string> => {
      if (externalTemporal) return externalTemporal;
      temporal = await startDevServer({ cliPath, ip: '127.0.0.1', port: 0, headless: true, namespace, log: quiet });
      return temporal.address;
    };
    let databaseUrl: string;
    let temporalAddress: string;
    if (temporalEnv.mode === 'server' && !externalTemporal) {
      // The production shape: temporal-server keeps its two databases on the suite's Postgres,
      // so it starts once Postgres is up.
      const binaries = await resolveTemporalServerBinaries({
        serverPath: temporalEnv.serverPath,
        sqlToolPath: temporalEnv.sqlToolPath,
        log: live,
      });
      databaseUrl = await startPg();
      serverDir = await fs.mkdtemp(path.join(os.tmpdir(), 'durable-jobs-test-temporal-'));
      server = await startTemporalServer({
        binaries,
        rootDir: serverDir,
        databaseUrl,
        databases: temporalEnv.databases,
        ports: defaultPorts(0),
        namespace,
        retentionHours: 24,
        log: quiet,
      });
      temporalAddress = server.address;
    } else {
      const [db, tp] = await Promise.allSettled([startPg(), startTemporal()]);
      if (db.status === 'rejected') throw db.reason;
      if (tp.status === 'rejected') throw tp.reason;
      databaseUrl = db.value;
      temporalAddress = tp.value;
    }

    recordFrom = temporalAddress;
    project.provide('databaseUrl', databaseUrl);
    project.provide('temporalAddress', temporalAddress);
    project.provide('temporalNamespace', namespace);
    project.provide('temporalCliPath', cliPath);

    const secs = Math.round((Date.now() - started) / 100) / 10;
    const pgDesc = pg ? `embedded Postgres on 127.0.0.1:${pg.port}` : `Postgres from DATABASE_URL (${redact(databaseUrl)})`;
    const tDesc = temporal
      ? `Temporal dev server on ${temporal.address} (namespace ${namespace}, ${cliPath ? cliPath : 'SDK download'})`
      : server
        ? `temporal-server on ${server.address} (namespace ${namespace}, Postgres databases ${temporalEnv.databases.temporal} + ${temporalEnv.databases.visibility})`
        : `Temporal from TEMPORAL_ADDRESS (${temporalAddress}, namespace ${namespace})`;
    console.log(`[global-setup] ${pgDesc}; ${tDesc}; ready in ${secs}s`);
    ready = true;
    return teardown;
  } catch (err) {
    for (const m of pending) console.error(`[global-setup] ${m}`);
    await teardown();
    throw err;
  }
}

const PG_PREFIX = 'durable-jobs-test-pg-';

/**
 * A run killed before its teardown (Ctrl-C twice, SIGKILL) leaves its temporary data dir behind
 * (the postmaster itself is stopped: see embedded-pg.ts). Remove such dirs once nothing has
 * touched them for an hour and their postmaster is gone. The age guard matters: concurrent runs
 * share os.tmpdir(), and during initdb the lock file comes and goes with short-lived backends.
 */
async function sweepStaleDataDirs(log: (msg: string) => void): Promise<void> {
  const tmp = os.tmpdir();
  const cutoff = Date.now() - 60 * 60_000;
  for (const name of await fs.readdir(tmp).catch(() => [] as string[])) {
    if (!name.startsWith(PG_PREFIX)) continue;
    const dir = path.join(tmp, name);
    try {
      const touched = await Promise.all(
        [dir, path.join(dir, 'data'), path.join(dir, 'data', 'global'), path.join(dir, 'data', 'postmaster.pid')].map((p) =>
          fs.stat(p).then(
            (st) => st.mtimeMs,
            () => 0,
          ),
        ),
      );
      if (Math.max(...touched) > cutoff) continue;
      const pidText = await fs.readFile(path.join(dir, 'data', 'postmaster.pid'), 'utf8').catch(() => null);
      const pid = pidText === null ? NaN : Number.parseInt(pidText.split('\n')[0] ?? '', 10);
      if (Number.isFinite(pid) && pid > 0 && isAlive(pid)) continue;
      await fs.rm(dir, { recursive: true, force: true });
      log(`removed a stale test data dir ${dir}`);
    } catch {
      /* raced with its owner: leave it */
    }
  }
}

function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable URL)';
  }
}
