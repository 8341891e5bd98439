/**
 * The server secret: the key of every keyed hash the product derives (job IDs, idempotency-key
 * and input hashes, stored API key hashes, key IDs in audit rows; `lib/ids.ts`), so that none
 * of them can be reversed or confirmed by guessing without it (security review F5).
 *
 * Configured as `DURABLE_JOBS_SECRET` or a file named by `DURABLE_JOBS_SECRET_FILE` (a mounted
 * secret), read once. Rotation is a list, newest first (comma- or newline-separated): the first
 * derives everything new, every listed one is still accepted by lookups (an idempotency key
 * submitted before the rotation finds its job; an API key hashed with an older secret is
 * accepted and rehashed). `npm start`, the dev stack and `durable-jobs/testing` generate one and
 * keep it in their data folder when none is set; production refuses to start without one.
 *
 * The value is never logged: the object prints as `[server secret]`, errors name the variables.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from './errors.js';

export const SECRET_ENV = 'DURABLE_JOBS_SECRET';
export const SECRET_FILE_ENV = 'DURABLE_JOBS_SECRET_FILE';
/** Each listed secret: at least this many characters (a generated one is 43: 256 random bits, base64url). */
export const MIN_SECRET_LENGTH = 32;
/** The file a dev stack keeps its generated secret in, inside its data folder. */
export const SECRET_FILE_NAME = 'server-secret';

export interface ServerSecret {
  /** The listed secrets, newest first: `[0]` derives, every one is accepted by lookups. */
  readonly keys: readonly Buffer[];
}

const LABEL = '[server secret]';

function secretOf(values: string[], from: string): ServerSecret {
  if (values.length === 0) throw new ConfigError(`${from} is empty: list one secret of at least ${MIN_SECRET_LENGTH} characters`);
  values.forEach((v, i) => {
    if (v.length < MIN_SECRET_LENGTH)
      throw new ConfigError(
        `${from}: secret ${i + 1} of ${values.length} is shorter than ${MIN_SECRET_LENGTH} characters (generate one: openssl rand -base64 32)`,
      );
  });
  const s: ServerSecret = { keys: values.map((v) => Buffer.from(v, 'utf8')) };
  // Printed, serialised or inspected, it is a label, never a value.
  Object.defineProperties(s, {
    toJSON: { value: () => LABEL },
    toString: { value: () => LABEL },
    [Symbol.for('nodejs.util.inspect.custom')]: { value: () => LABEL },
  });
  return s;
}

/** Comma- or newline-separated, trimmed, empty entries ignored. */
const listOf = (raw: string) =>
  raw
    .split(/[,\n]/)
    .map((v) => v.trim())
    .filter((v) => v !== '');

/**
 * The configured secret (`lib/config.ts` calls this with the two variables): the value wins,
 * else the file's content; undefined when neither is set. A file that cannot be read, or a
 * secret shorter than 32 characters, is a ConfigError naming the variable, never the value.
 */
export function serverSecretFrom(value: string | undefined, file: string | undefined): ServerSecret | undefined {
  if (value !== undefined && value !== '') return secretOf(listOf(value), SECRET_ENV);
  if (file === undefined || file === '') return undefined;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`${SECRET_FILE_ENV}: cannot read the file it names (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  return secretOf(listOf(text), SECRET_FILE_ENV);
}

/** A new random secret: 256 bits, base64url (43 characters). */
export function generateSecretValue(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * The dev stack's secret, kept in `<dataDir>/server-secret` (mode 0600): read when it exists,
 * else generated and written. Created exclusively, so the API and workers of one stack that
 * start at once all end up with the one that won. Returns the file's path with the secret.
 */
export function persistedServerSecret(dataDir: string): { file: string; secret: ServerSecret } {
  const file = path.join(path.resolve(dataDir), SECRET_FILE_NAME);
  mkdirSync(path.dirname(file), { recursive: true });
  try {
    writeFileSync(file, `${generateSecretValue()}\n`, { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return { file, secret: serverSecretFrom(undefined, file)! };
}

/**
 * An entry point's secret: the configured one; in dev mode without one, the stack's own
 * (`persistedServerSecret(dataDir)`); in production without one, a ConfigError naming the variables.
 */
export function serverSecretFor(configured: ServerSecret | undefined, mode: 'dev' | 'production', dataDir: string): ServerSecret {
  if (configured) return configured;
  if (mode === 'dev') return persistedServerSecret(dataDir).secret;
  throw new ConfigError(
    `${SECRET_ENV} is not set: production derives job IDs and key hashes with a server secret; set ${SECRET_ENV} (at least ${MIN_SECRET_LENGTH} characters; openssl rand -base64 32), or ${SECRET_FILE_ENV} to a file that holds it`,
  );
}

let installed: ServerSecret | undefined;

/**
 * Makes `secret` the one `lib/ids.ts` derives with, for this process. Entry points call it once
 * after reading their configuration (`runServer`, `runWorker`, the test stack); a later call
 * replaces it (tests of rotation).
 */
export function useServerSecret(secret: ServerSecret): void {
  installed = secret;
}

/** The secret in use; a ConfigError when the process installed none. */
export function currentServerSecret(): ServerSecret {
  if (!installed)
    throw new ConfigError(
      `no server secret in this process: pass { secret } (the value of ${SECRET_ENV}) to createJobsClient / createWorker / createServer, or run durable-jobs api / worker with ${SECRET_ENV} set`,
    );
  return installed;
}

/** What a library face's `secret` option takes: the value of `DURABLE_JOBS_SECRET` (a list: newest first), or a read `ServerSecret`. */
export type ServerSecretOption = string | readonly string[] | ServerSecret;

const sameSecret = (a: ServerSecret, b: ServerSecret) => a.keys.length === b.keys.length && a.keys.every((k, i) => k.equals(b.keys[i]!));

/**
 * A library face's `secret` option (`createJobsClient`, `createWorker`, `createServer`): installs
 * it for the process. A process derives with one secret, so a different one than the installed
 * is refused (two clients with two secrets would give one intent two job IDs). Without the
 * option the installed secret is used, else `DURABLE_JOBS_SECRET` (or `_FILE`) from the
 * environment; none at all is a ConfigError now, not at the first submit.
 */
export function adoptServerSecret(option: ServerSecretOption | undefined, who: string): void {
  if (option === undefined) {
    // A team's own process: the same variable the durable-jobs commands read.
    if (!installed) {
      const fromEnv = serverSecretFrom(process.env[SECRET_ENV], process.env[SECRET_FILE_ENV]);
      if (fromEnv) installed = fromEnv;
    }
    currentServerSecret();
    return;
  }
  const secret =
    typeof option === 'string'
      ? secretOf(listOf(option), `${who}: secret`)
      : Array.isArray(option)
        ? secretOf([...(option as readonly string[])], `${who}: secret`)
        : (option as ServerSecret);
  if (installed && installed !== secret && !sameSecret(installed, secret))
    throw new ConfigError(`${who}: secret differs from the server secret this process already uses; a process derives with one`);
  installed = secret;
}

/** Whether a secret is installed (the library faces install one only when their caller has not). */
export function hasServerSecret(): boolean {
  return installed !== undefined;
}

/**
 * Scripts that run a whole stack in and under one process (the bench, the drill): the
 * configured secret, else a fresh one, installed here and put in `env` so the worker processes
 * they spawn derive alike.
 */
export function scriptServerSecret(env: NodeJS.ProcessEnv): ServerSecret {
  let secret = serverSecretFrom(env[SECRET_ENV], env[SECRET_FILE_ENV]);
  if (!secret) {
    const value = generateSecretValue();
    env[SECRET_ENV] = value;
    secret = serverSecretFrom(value, undefined)!;
  }
  useServerSecret(secret);
  return secret;
}
