// The environment of the production-shape Temporal server, read and validated in one place for
// the scripts that start it (`npm run temporal-server`, `TEMPORAL_MODE=server npm start`, the
// test setup, the drill). The product itself never reads these: its processes only see
// TEMPORAL_ADDRESS.
import { portsFromEnv, type TemporalDatabases, type TemporalServerPorts } from './temporal-server.js';

export type TemporalMode = 'dev' | 'server';

export interface TemporalServerEnv {
  /** TEMPORAL_MODE: `dev` (default: the CLI's SQLite dev server) or `server` (temporal-server on Postgres). */
  mode: TemporalMode;
  /** TEMPORAL_SERVER_PATH / TEMPORAL_SQL_TOOL_PATH: explicit binaries. */
  serverPath: string | undefined;
  sqlToolPath: string | undefined;
  /** TEMPORAL_SERVER_PORT (frontend, default 7233) and TEMPORAL_SERVER_PORTS overrides. */
  ports: TemporalServerPorts;
  /** TEMPORAL_DB / TEMPORAL_VISIBILITY_DB: default temporal / temporal_visibility. */
  databases: TemporalDatabases;
  /** TEMPORAL_RETENTION_HOURS: retention of the namespace it creates; default 72. */
  retentionHours: number;
}

export function temporalServerEnv(env: NodeJS.ProcessEnv): TemporalServerEnv {
  const val = (k: string) => (env[k] === '' ? undefined : env[k]);
  const mode = val('TEMPORAL_MODE') ?? 'dev';
  if (mode !== 'dev' && mode !== 'server')
    throw new Error(`TEMPORAL_MODE must be "dev" (the CLI dev server) or "server" (temporal-server on Postgres), got "${mode}"`);
  const db = (k: string, fallback: string) => {
    const v = val(k) ?? fallback;
    if (!/^[a-z_][a-z0-9_]{0,50}$/.test(v)) throw new Error(`${k} must be lower-case letters, digits and _ (at most 51), got "${v}"`);
    return v;
  };
  const retention = Number(val('TEMPORAL_RETENTION_HOURS') ?? 72);
  if (!Number.isInteger(retention) || retention < 1 || retention > 24 * 365)
    throw new Error('TEMPORAL_RETENTION_HOURS must be a whole number of hours, 1-8760');
  const databases = { temporal: db('TEMPORAL_DB', 'temporal'), visibility: db('TEMPORAL_VISIBILITY_DB', 'temporal_visibility') };
  if (databases.temporal === databases.visibility)
    throw new Error('TEMPORAL_DB and TEMPORAL_VISIBILITY_DB must differ: the main store and visibility need their own databases');
  return {
    mode,
    serverPath: val('TEMPORAL_SERVER_PATH'),
    sqlToolPath: val('TEMPORAL_SQL_TOOL_PATH'),
    ports: portsFromEnv(env),
    databases,
    retentionHours: retention,
  };
}
