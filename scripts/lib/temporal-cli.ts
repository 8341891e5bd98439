// Locates (or builds) the Temporal CLI used to run the local dev server: a pinned Go binary,
// resolved like temporal-server (go-binary.ts). Order (docs: API.md, "Local stack: obtaining
// the Temporal CLI"):
//   1. an explicit path (TEMPORAL_CLI_PATH): it must exist and run, else we throw;
//   2. `temporal` on PATH;
//   3. the cached binary: `${XDG_CACHE_HOME || ~/.cache}/durable-jobs/temporal-cli/<version>/temporal`;
//   4. if `go` is on PATH: `go install github.com/temporalio/cli/cmd/temporal@<version>` into a
//      temporary GOBIN next to the cache, then an atomic rename into the cache path;
//   5. otherwise null: the caller falls back to the Temporal SDK's own download.
// Concurrent resolvers (two `npm start`s, or CI steps) share one build (go-binary.ts's lock).

import { goBinaryCachePath, GoBinaryNotFoundError, resolveGoBinary, type GoBinarySpec } from './go-binary.js';

export const TEMPORAL_CLI_VERSION = 'v1.5.1';

const CLI_SPEC: GoBinarySpec = {
  name: 'temporal',
  label: 'Temporal CLI',
  goPackage: 'github.com/temporalio/cli/cmd/temporal',
  version: TEMPORAL_CLI_VERSION,
  cacheDir: 'temporal-cli',
  envVar: 'TEMPORAL_CLI_PATH',
  buildHint: 'takes several minutes the first time',
  // The package holding the CLI's version string; without it the binary reports 0.0.0-DEV.
  goFlags: [`-ldflags=-X github.com/temporalio/cli/temporalcli.Version=${TEMPORAL_CLI_VERSION.replace(/^v/, '')}`],
};

export interface ResolveTemporalCliOptions {
  /** Explicit binary (the TEMPORAL_CLI_PATH value). */
  cliPath?: string;
  log: (msg: string) => void;
  /** Build with `go install` when nothing else is found. Default true. */
  allowGoInstall?: boolean;
}

export function temporalCliCachePath(): string {
  return goBinaryCachePath(CLI_SPEC);
}

/** The CLI's path, or null when there is none and none could be built (no `go`, or not allowed). */
export async function resolveTemporalCli(opts: ResolveTemporalCliOptions): Promise<string | null> {
  try {
    return await resolveGoBinary(CLI_SPEC, { explicitPath: opts.cliPath, log: opts.log, allowGoInstall: opts.allowGoInstall });
  } catch (err) {
    if (!(err instanceof GoBinaryNotFoundError)) throw err;
    if (err.goMissing) opts.log('Temporal CLI not found and `go` is not on PATH');
    return null;
  }
}
