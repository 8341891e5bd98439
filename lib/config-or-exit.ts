import { loadConfig, type Config, type ConfigOptions } from './config.js';
import { ConfigError } from './errors.js';

/**
 * An entry point's configuration (`npm start`, a worker process, the API): a bad setting is one
 * line on stderr that names it, and exit code 2, not a stack trace. Other errors are thrown.
 */
export function loadConfigOrExit(program: string, env: NodeJS.ProcessEnv, opts: ConfigOptions): Config {
  try {
    return loadConfig(env, opts);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${program}: configuration error: ${err.message}\n`);
    process.exit(2);
  }
}

/** Like `loadConfigOrExit` for an async step (loading the jobs module): a `ConfigError` is one line on stderr and exit code 2. */
export async function exitOnConfigError<T>(program: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${program}: configuration error: ${err.message}\n`);
    process.exit(2);
  }
}
