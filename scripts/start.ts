/**
 * `npm start`: the whole local stack in the foreground. Postgres (embedded unless
 * DATABASE_URL), the Temporal dev server with its Web UI (unless TEMPORAL_ADDRESS), the
 * provider simulator (unless PROVIDER_URL), migrations, the HTTP API and WORKERS worker
 * processes. TEMPORAL_MODE=server runs temporal-server on the stack's Postgres instead of the
 * dev server (the production shape). Ctrl-C or SIGTERM stops every part, children first.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { exitOnConfigError, loadConfigOrExit } from '../lib/config-or-exit.js';
import { jobRegistryFromEnv } from '../job-api/load.js';
import { modulePath } from '../job-api/registry.js';
import { parseWebhookSecrets, sourceBinding } from '../lib/webhook-secrets.js';
import { createPool } from '../lib/db.js';
import { createLogger } from '../lib/logger.js';
import { connectClient } from '../lib/temporal.js';
import { prepareStack } from '../services/stack.js';
import { persistedServerSecret, serverSecretFrom, useServerSecret } from '../lib/secret.js';
import { startSimulator } from '../simulator/server.js';
import { startDevServer } from './lib/dev-server.js';
import { startEmbeddedPostgres } from './lib/embedded-pg.js';
import { superviseChild, type Supervised } from './lib/supervise.js';
import { workerProcessEnv } from '../lib/worker-allocator.js';
import { tryCurlLine } from './lib/try-line.js';
import { pollersProbe, readyzProbe, waitForStack } from './lib/stack-ready.js';
import { postgresBannerLine, showDatabasePassword } from './lib/banner.js';
import { workerIdentity } from '../lib/temporal.js';
import { resolveTemporalCli } from './lib/temporal-cli.js';
import { defaultJobRegistry } from '../jobs/index.js';
import { resolveTemporalServerBinaries, startTemporalServer } from './lib/temporal-server.js';
import { temporalServerEnv } from './lib/temporal-server-env.js';
import { resolveTemporalUiServer, startTemporalUi, TEMPORAL_UI_VERSION } from './lib/temporal-ui.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
// The stack's data lives where it is started (this repository for `npm start`, a team's
// project for `durable-jobs dev`), never inside an installed package.
const DATA = path.resolve(process.env.DURABLE_JOBS_DATA_DIR || '.data');
const jobs = await exitOnConfigError('start', () => jobRegistryFromEnv(process.env, () => defaultJobRegistry));
const say = (msg: string) => console.log(`[start] ${msg}`);

const config = loadConfigOrExit('start', process.env, {
  jobTypes: jobs.names,
  fastPathTypes: jobs.fastPathTypes,
  mode: 'dev',
});
// The stack's server secret: the configured one, else its own, generated once and kept beside
// its data (`.data/server-secret`), so job IDs and key hashes stay the same across restarts.
// The API and the workers read the same file.
const secretFile = config.serverSecret ? undefined : persistedServerSecret(DATA).file;
useServerSecret(config.serverSecret ?? serverSecretFrom(undefined, secretFile)!);

/**
 * `.data/pg` by default. As root, embedded Postgres runs as the `postgres` user, which must
 * be able to reach the folder: a checkout under a private home (`/root` is 0700) cannot be,
 * so the data goes to a per-checkout folder under /var/lib instead (and says so).
 */
function embeddedPgDataDir(): string {
  const preferred = path.join(DATA, 'pg');
  if (process.getuid?.() !== 0) return preferred;
  for (let dir = DATA; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0 && dir !== DATA) {
      const alt = path.join('/var/lib/durable-jobs', createHash('sha256').update(ROOT).digest('hex').slice(0, 12), 'pg');
      say(`${dir} is private to root, so the postgres user cannot reach ${preferred}; using ${alt}`);
      return alt;
    }
  }
  return preferred;
}
const stops: Array<() => Promise<void>> = [];
let children: Supervised[] = [];
/** Ends the wait for the API and a worker when Ctrl-C comes first. */
const startup = new AbortController();

async function stopAll(signal: string): Promise<void> {
  startup.abort();
  say(`${signal}: stopping workers and API, then the simulator, Temporal and Postgres`);
  await Promise.all(children.map((c) => c.stop()));
  for (const stop of stops.reverse()) await stop().catch((e: Error) => say(`stop failed: ${e.message}`));
  say('stopped');
}
let stopping = false;
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

/** Brings every part up in order; a failure stops what was already started and exits 1. */
async function bringUp(): Promise<void> {
  mkdirSync(DATA, { recursive: true });
  let databaseUrl = config.databaseUrl;
  let pgDataDir: string | null = null;
  if (!databaseUrl) {
    const dataDir = embeddedPgDataDir();
    const pgDb = await startEmbeddedPostgres({ dataDir, log: say, persistent: true });
    stops.push(() => pgDb.stop());
    databaseUrl = pgDb.url;
    pgDataDir = path.relative(ROOT, dataDir).startsWith('..') ? dataDir : path.relative(ROOT, dataDir);
    say(`embedded Postgres on 127.0.0.1:${pgDb.port} (data in ${pgDataDir})`);
  }

  let temporalAddress = config.temporalAddress;
  let uiUrl: string | null = null;
  const temporalEnv = temporalServerEnv(process.env);
  if (!temporalAddress && temporalEnv.mode === 'server') {
    // The production shape: temporal-server on this stack's Postgres (scripts/lib/temporal-server.ts).
    const binaries = await resolveTemporalServerBinaries({
      serverPath: temporalEnv.serverPath,
      sqlToolPath: temporalEnv.sqlToolPath,
      log: say,
    });
    const server = await startTemporalServer({
      binaries,
      rootDir: path.join(DATA, 'temporal-server'),
      databaseUrl,
      databases: temporalEnv.databases,
      ports: temporalEnv.ports,
      namespace: config.temporalNamespace,
      retentionHours: temporalEnv.retentionHours,
      log: say,
    });
    stops.push(() => server.stop());
    temporalAddress = server.address;
    // The Web UI server beside it (v2.54.1: task failures, activity pause and reset).
    const ui = await startTemporalUi({
      binary: await resolveTemporalUiServer({ path: process.env.TEMPORAL_UI_SERVER_PATH, log: say }),
      rootDir: path.join(DATA, 'temporal-ui'),
      temporalAddress,
      port: config.temporalUiPort,
      namespace: config.temporalNamespace,
    });
    stops.push(() => ui.stop());
    uiUrl = ui.url;
    say(`Temporal Web UI ${TEMPORAL_UI_VERSION} on ${ui.url}`);
  } else if (!temporalAddress) {
    const cliPath = await resolveTemporalCli({ cliPath: config.temporalCliPath, log: say });
    const dev = await startDevServer({
      cliPath,
      port: 7233,
      uiPort: config.temporalUiPort,
      dbFilename: path.join(DATA, 'temporal.sqlite'),
      namespace: config.temporalNamespace,
      log: say,
    });
    stops.push(() => dev.stop());
    temporalAddress = dev.address;
    uiUrl = dev.uiUrl;
  }

  const log = createLogger('start', 'warn');
  const pool = createPool(databaseUrl, log);
  const temporal = await connectClient(config, temporalAddress);
  const { applied, searchAttributesAdded: added } = await prepareStack(pool, {
    tenants: config.seedTenants,
    temporal: { connection: temporal.connection, namespace: config.temporalNamespace },
  });
  await pool.end();
  say(applied.length > 0 ? `migrations applied: ${applied.join(', ')}` : 'schema up to date');
  if (added.length > 0) say(`registered search attributes: ${added.join(', ')}`);
  await temporal.connection.close();

  const secrets = { ...config.webhookSecrets };
  // `sim` may be configured bound to a tenant (`sim@tenant-a=...`, docs/triggers.md): its secrets are the simulator's then.
  const simKey = Object.keys(secrets).find((k) => sourceBinding(k).source === 'sim');
  if (simKey) secrets.sim = secrets[simKey]!;
  else {
    secrets.sim = [`whsec_${randomBytes(24).toString('base64')}`];
    // Never printed: a secret does not reach the terminal (or a CI log that captures it).
    say('generated a webhook secret for source "sim", shared by the simulator and the API (set WEBHOOK_SECRETS=sim=... to choose one)');
  }
  let providerUrl = config.providerUrl;
  if (!providerUrl) {
    const sim = await startSimulator({ port: config.simPort, webhookUrl: config.simWebhookUrl, webhookSecret: secrets.sim[0] });
    stops.push(() => sim.close());
    providerUrl = sim.url;
  }

  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    DURABLE_JOBS_MODE: 'dev',
    ...(secretFile ? { DURABLE_JOBS_SECRET_FILE: secretFile } : {}),
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporalAddress,
    PROVIDER_URL: providerUrl,
    // WEBHOOK_SECRETS_FILE (if set) passes through in process.env and stays the API's to re-read
    // on SIGHUP: only the variable's own entries (and a generated sim secret) go here.
    WEBHOOK_SECRETS: Object.entries({
      ...parseWebhookSecrets(config.webhookSecretsSource.env),
      ...(simKey ? {} : { sim: secrets.sim }),
    })
      .map(([s, list]) => `${s}=${list.join('|')}`)
      .join(','),
    SEED_TENANTS: config.seedTenants.map((t) => `${t.tenantId}=${t.apiKey}`).join(','),
    SEED_HIGH_PRIORITY_TENANTS: config.seedTenants
      .filter((t) => t.highPriority)
      .map((t) => t.tenantId)
      .join(','),
    ...(config.adminApiKey ? { ADMIN_API_KEY: config.adminApiKey } : {}),
    // The console links jobs to the Web UI this stack really has.
    ...(process.env.TEMPORAL_UI_URL || config.temporalAddress ? {} : { TEMPORAL_UI_URL: uiUrl ?? 'none' }),
  };
  children = [
    superviseChild({ name: 'api', entry: modulePath(path.join(ROOT, 'server/main.ts')), env: childEnv, log: say }),
    ...Array.from({ length: config.workers }, (_, i) =>
      superviseChild({
        name: `worker-${i + 1}`,
        entry: modulePath(path.join(ROOT, 'workers/main.ts')),
        env: workerProcessEnv(childEnv),
        log: say,
        // The worker drains for its grace time, then the SDK's force margin (workers/worker.ts).
        killAfterMs: (config.workerShutdownGraceSeconds + 15) * 1000,
      }),
    ),
  ];

  const api = `http://127.0.0.1:${config.httpPort}`;
  // "The stack is up" only once its try: curl line works when pasted and a job can run.
  if (config.workers === 0) say('WORKERS=0: no worker is started, so jobs stay queued until one polls; waiting for the API only');
  const probe = await connectClient(config, temporalAddress);
  const missing = await waitForStack({
    workers: config.workers,
    taskQueue: config.taskQueue,
    // Read at each look: a worker that died and was restarted has a new pid.
    get ownIdentities() {
      return children.filter((c) => c.name.startsWith('worker-')).flatMap((c) => (c.pid() === undefined ? [] : [workerIdentity(c.pid()!)]));
    },
    probes: { readyz: readyzProbe(api), pollers: pollersProbe(probe, config.taskQueue) },
    report: (waitingFor) => say(`still waiting for ${waitingFor.join(' and ')}`),
    signal: startup.signal,
  }).finally(() => probe.connection.close());
  if (missing.length > 0) return; // stopped while starting
  say('the stack is up:');
  say(`  HTTP API         ${api}`);
  say(await adminListenerLine(config.adminListener));
  say(postgresBannerLine({ url: databaseUrl, dataDir: pgDataDir, showPassword: showDatabasePassword(process.env) }));
  const serverMode = temporalEnv.mode === 'server' && !config.temporalAddress;
  say(
    `  Temporal         ${temporalAddress}, namespace ${config.temporalNamespace}${uiUrl && !serverMode ? ` (history in ${path.relative(ROOT, DATA)}/temporal.sqlite)` : ''}`,
  );
  if (uiUrl) say(`  Temporal Web UI  ${uiUrl}`);
  say(`  provider         ${providerUrl}${config.providerUrl ? '' : ' (simulator)'}`);
  say(`  workers          ${config.workers}`);
  say(tryCurlLine(api, config.seedTenants));
}

/**
 * Where `/metrics`, `/openapi.json` and the detailed `/readyz` are (F7): the API's admin listener
 * if it answers (its default port may be taken by another API on this host), else the API port
 * with the admin key.
 */
async function adminListenerLine(c: typeof config.adminListener): Promise<string> {
  const url = `http://${c.host}:${c.port}`;
  const up =
    c.enabled &&
    c.port !== 0 &&
    (await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.ok,
      () => false,
    ));
  return up
    ? `  admin listener   ${url}  (/metrics, /openapi.json, /readyz with reasons; no key, this host only)`
    : '  admin listener   none (ADMIN_LISTEN_PORT): /metrics, /openapi.json and /readyz reasons need the admin key on the HTTP API';
}

bringUp().catch(async (err: Error) => {
  say(`could not start the stack: ${err.message}`);
  if (!stopping) {
    stopping = true;
    await stopAll('startup failure').catch(() => undefined);
  }
  process.exit(1);
});
