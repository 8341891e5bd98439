/**
 * `npm run temporal-server`: the production shape of Temporal on this machine, in the
 * foreground: `temporal-server` v1.32.1 (frontend, history, matching and worker in one process,
 * bound to 127.0.0.1) on PostgreSQL: DATABASE_URL's server, or an embedded cluster of its own
 * under .data/temporal-server/pg. Obtains the binaries, sets up both schemas, writes the config,
 * starts the server, creates the namespace and the search attributes, and says when a job could
 * be accepted. Ctrl-C stops it cleanly. `-- --ensure-binaries` only obtains the binaries (CI).
 *
 * Point the stack at it with TEMPORAL_ADDRESS=127.0.0.1:7233, or let
 * `TEMPORAL_MODE=server npm start` run it for you on the stack's own Postgres.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../lib/config.js';
import { startEmbeddedPostgres, type EmbeddedPg } from './lib/embedded-pg.js';
import { resolveTemporalServerBinaries, startTemporalServer, type TemporalServer } from './lib/temporal-server.js';
import { temporalServerEnv } from './lib/temporal-server-env.js';
import { resolveTemporalUiServer, startTemporalUi, type TemporalUi } from './lib/temporal-ui.js';
import { defaultJobRegistry } from '../jobs/index.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const say = (m: string) => console.log(`[temporal-server] ${m}`);

let server: TemporalServer | undefined;
let ui: TemporalUi | undefined;
let pgDb: EmbeddedPg | undefined;
let stopping = false;
async function stopAll(why: string): Promise<void> {
  say(`${why}: stopping temporal-server${pgDb ? ' and its Postgres' : ''}`);
  await ui?.stop();
  await server?.stop();
  await pgDb?.stop();
  say('stopped');
}
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    if (stopping) return;
    stopping = true;
    stopAll(sig).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}

try {
  const env = temporalServerEnv(process.env);
  const config = loadConfig(process.env, {
    jobTypes: defaultJobRegistry.names,
    fastPathTypes: defaultJobRegistry.fastPathTypes,
    mode: 'dev',
  });
  const started = Date.now();
  const binaries = await resolveTemporalServerBinaries({ serverPath: env.serverPath, sqlToolPath: env.sqlToolPath, log: say });
  const uiBinary = await resolveTemporalUiServer({ path: process.env.TEMPORAL_UI_SERVER_PATH, log: say });
  if (process.argv.includes('--ensure-binaries')) {
    say(`binaries ready in ${Math.round((Date.now() - started) / 1000)}s`);
    process.exit(0);
  }
  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    pgDb = await startEmbeddedPostgres({ dataDir: path.join(ROOT, '.data', 'temporal-server', 'pg'), log: say, persistent: true });
    databaseUrl = pgDb.url;
  }
  if (stopping) throw new Error('interrupted');
  server = await startTemporalServer({
    binaries,
    rootDir: path.join(ROOT, '.data', 'temporal-server'),
    databaseUrl,
    databases: env.databases,
    ports: env.ports,
    namespace: config.temporalNamespace,
    retentionHours: env.retentionHours,
    log: say,
  });
  ui = await startTemporalUi({
    binary: uiBinary,
    rootDir: path.join(ROOT, '.data', 'temporal-ui'),
    temporalAddress: server.address,
    port: config.temporalUiPort,
    namespace: server.namespace,
  });
  say(`ready: TEMPORAL_ADDRESS=${server.address} TEMPORAL_NAMESPACE=${server.namespace}, Web UI ${ui.url} (Ctrl-C stops it)`);
} catch (err) {
  say(`could not start: ${(err as Error).message}`);
  if (!stopping) {
    stopping = true;
    await stopAll('startup failure').catch(() => undefined);
  }
  process.exit(1);
}
