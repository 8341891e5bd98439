import { readFile } from 'node:fs/promises';
import { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { SEARCH_ATTRIBUTE_NAMES } from '../contract/messages.js';
import type { Config } from './config.js';

export { JobStateKey, JobTypeKey, TenantIdKey } from '../contract/messages.js';

/** Connection options for a local dev server, a self-hosted cluster (mTLS) or Temporal Cloud (API key). */
export interface TemporalConnectionOptions {
  address: string;
  tls?: boolean | { clientCertPair: { crt: Buffer; key: Buffer } };
  apiKey?: string;
}

/** Works for both the client `Connection` and the worker's `NativeConnection`. */
export async function connectionOptions(config: Config, address: string): Promise<TemporalConnectionOptions> {
  const opts: TemporalConnectionOptions = { address };
  if (config.temporalTls) {
    opts.tls = config.temporalTlsCertPath && config.temporalTlsKeyPath
      ? { clientCertPair: { crt: await readFile(config.temporalTlsCertPath), key: await readFile(config.temporalTlsKeyPath) } }
      : true;
  }
  if (config.temporalApiKey) opts.apiKey = config.temporalApiKey;
  return opts;
}

/** A client for the configured Temporal; `connection` is the concrete one (operator and health services). */
export async function connectClient(config: Config, address: string): Promise<Client & { connection: Connection }> {
  const connection = await Connection.connect(await connectionOptions(config, address));
  return Object.assign(new Client({ connection, namespace: config.temporalNamespace }), { connection });
}

/**
 * Makes sure the product's search attributes exist on the namespace, also on a server we
 * did not start (where `--search-attribute` flags were never passed). Adding an existing
 * attribute is skipped, so this is idempotent.
 */
export async function ensureSearchAttributes(connection: Connection, namespace: string): Promise<string[]> {
  const wanted: readonly string[] = SEARCH_ATTRIBUTE_NAMES;
  const existing = await connection.operatorService.listSearchAttributes({ namespace });
  const have = new Set(Object.keys(existing.customAttributes ?? {}));
  const missing = wanted.filter((n) => !have.has(n));
  if (missing.length > 0) {
    const keyword = proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
    try {
      await connection.operatorService.addSearchAttributes({
        namespace,
        searchAttributes: Object.fromEntries(missing.map((n) => [n, keyword])),
      });
    } catch (err) {
      // Another process may have added them in the meantime; re-check before failing.
      const again = await connection.operatorService.listSearchAttributes({ namespace });
      const still = missing.filter((n) => !(n in (again.customAttributes ?? {})));
      if (still.length > 0) throw new Error(`cannot register search attributes ${still.join(', ')}: ${(err as Error).message}`, { cause: err });
    }
  }
  return missing;
}
