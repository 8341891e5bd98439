// The C allocator setting every worker process is started with.
//
// glibc serves an allocation of 128 KiB or more from a mapping of its own, returned to the OS
// when freed, but it raises that threshold (up to 32 MiB) each time such a block is freed. After
// that, large transient buffers of the Temporal core's runtime threads (a busy worker's burst of
// tasks; which buffers was not traced) come from those threads' arenas instead, and the freed
// space stays resident: glibc trims an arena only from its top. With 400 summarize jobs held in
// their activity, the core's two threads' arenas held 85 MB, about 95 % of it free
// (bench/README.md, "Where a worker's memory goes"). With the threshold held at glibc's own
// default, a worker with 1,000 held jobs grew 252 KB per job above idle instead of 426 KB, and
// a bare worker 144 KB instead of 160 KB.
//
// glibc reads the variable only at process start, so the launchers set it for the processes they
// spawn (`npm start`, `npm run worker`, the drill, the bench) and a worker started another way
// logs how to set it. Other C libraries (musl, macOS) ignore it.

/** The variable glibc reads at start (the legacy spelling of the tunable `glibc.malloc.mmap_threshold`). */
export const MMAP_THRESHOLD_ENV = 'MALLOC_MMAP_THRESHOLD_';
/** glibc's own initial threshold (128 KiB), kept fixed instead of rising after frees. */
export const WORKER_MMAP_THRESHOLD_BYTES = 131_072;

/**
 * Whether the environment already sets the threshold, by the variable or by `GLIBC_TUNABLES`.
 * An empty variable sets nothing (glibc ignores it), as `npm run worker`'s `${VAR:-...}` reads it.
 */
export function setsMmapThreshold(env: NodeJS.ProcessEnv): boolean {
  return (env[MMAP_THRESHOLD_ENV] ?? '') !== '' || /(^|:)glibc\.malloc\.mmap_threshold=/.test(env.GLIBC_TUNABLES ?? '');
}

/** The environment a worker process is spawned with: `env`, plus the fixed threshold unless `env` sets one. */
export function workerProcessEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return setsMmapThreshold(env) ? env : { ...env, [MMAP_THRESHOLD_ENV]: String(WORKER_MMAP_THRESHOLD_BYTES) };
}

/**
 * What a worker started without the setting logs at start, or null when there is nothing to say:
 * the setting is there, or the process does not run on glibc (`glibcVersion` undefined).
 */
export function allocatorAdvice(env: NodeJS.ProcessEnv, glibcVersion: string | undefined): string | null {
  if (glibcVersion === undefined || setsMmapThreshold(env)) return null;
  return (
    `${MMAP_THRESHOLD_ENV} is not set: with glibc ${glibcVersion}, memory a busy worker has freed stays resident ` +
    `(1,000 running jobs: 638 MB against 451 MB with it). Start workers with ${MMAP_THRESHOLD_ENV}=${WORKER_MMAP_THRESHOLD_BYTES} ` +
    `(npm run worker and npm start do); see the README, "Worker memory".`
  );
}
