/**
 * Credentials of the upstreams a job type calls (an API key, a token). Declared where the
 * upstream is (`credential('STRIPE_API_KEY')`), read once when the worker starts
 * (`readCredentials`, from the environment the entry point hands it), so a missing one stops
 * the worker at start with the variable's name instead of dead-lettering every job later.
 *
 * A credential's value is never in a log, a history, a dead letter, `/metrics` or an error
 * message: the object prints as its variable's name, errors name the variable only, and
 * `scrubCredentials` takes every value read out of an upstream's error message before it
 * becomes a failure (a client that echoes the key it was given cannot leak it that way).
 */
import { readFileSync } from 'node:fs';
import { ConfigError } from './errors.js';

export interface CredentialSource {
  /** The variable that holds the value. */
  env: string;
  /** The variable that names a file holding the value (a mounted secret). Default `<env>_FILE`. */
  file?: string;
}

export interface Credential {
  readonly env: string;
  readonly file: string;
  /** The value, as read at worker start. Throws a ConfigError (naming the variable) if it was not read. */
  value(): string;
}

const VARIABLE = /^[A-Z_][A-Z0-9_]*$/;
/** Every value read in this process, longest first: what `scrubCredentials` removes. */
const known: Array<{ value: string; label: string }> = [];
const values = new WeakMap<Credential, string>();

/** Declares a credential: `credential('STRIPE_API_KEY')` or `credential({ env, file })`. Reads nothing yet. */
export function credential(source: string | CredentialSource): Credential {
  const s = typeof source === 'string' ? { env: source } : source;
  const file = s.file ?? `${s.env}_FILE`;
  for (const v of [s.env, file]) {
    if (!VARIABLE.test(v)) throw new Error(`credential variable "${v}" must be upper-case letters, digits and _`);
  }
  const c: Credential = {
    env: s.env,
    file,
    value() {
      const v = values.get(c);
      if (v === undefined)
        throw new ConfigError(`credential ${s.env} was not read at worker start: list its upstream in jobType(..., { upstreams })`);
      return v;
    },
  };
  // Printed, serialised or inspected, it is its variable's name, never its value.
  const label = `[credential ${s.env}]`;
  Object.defineProperties(c, {
    toJSON: { value: () => label },
    toString: { value: () => label },
    [Symbol.for('nodejs.util.inspect.custom')]: { value: () => label },
  });
  return c;
}

/**
 * Reads each credential once: `env` wins, else the file `file` names (trimmed). A missing or
 * empty one is a ConfigError naming both variables, never a value. Reading one again (two
 * workers in one process) keeps the first value: a credential is read once per process.
 */
export function readCredentials(credentials: Iterable<Credential>, env: NodeJS.ProcessEnv): void {
  for (const c of credentials) {
    if (values.has(c)) continue;
    let v = env[c.env];
    const path = env[c.file];
    if ((v === undefined || v === '') && path) {
      try {
        v = readFileSync(path, 'utf8').trim();
      } catch (err) {
        throw new ConfigError(
          `credential ${c.env}: cannot read the file ${c.file} names (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
        );
      }
    }
    if (v === undefined || v === '')
      throw new ConfigError(`credential ${c.env} is not set: set ${c.env}, or ${c.file} to a file that holds it`);
    values.set(c, v);
    known.push({ value: v, label: `[credential ${c.env}]` });
    known.sort((a, b) => b.value.length - a.value.length);
  }
}

/** `text` with every credential value this process read replaced by its variable's name. */
export function scrubCredentials(text: string): string {
  let t = text;
  for (const k of known) if (t.includes(k.value)) t = t.split(k.value).join(k.label);
  return t;
}
