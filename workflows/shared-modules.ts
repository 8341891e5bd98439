/**
 * Loaded once per workflow thread, before any workflow runs (the bundler's `preloadModules`,
 * `workers/worker.ts`). With the SDK's reusable V8 context every module a workflow imports is
 * otherwise evaluated again for each workflow in the cache, and zod is the heavy one (job
 * definitions build their input schemas with it: about 200 constructors and their closures).
 * Evaluated per workflow it was almost half of a running job's memory in the worker.
 *
 * The SDK freezes what is loaded here, globals included, so this module also does zod's lazy
 * first-use set-up now: its first schema writes the default locale and memoizer into a global
 * config object (`globalThis.__zod_globalConfig`), which would be read-only by the time a
 * workflow's definition builds its schema. Workflows never parse with zod (the intake does),
 * so the parse-time state zod keeps in its module scope is not shared between them in practice.
 */
import { z } from 'zod';

/** Zod's first-use set-up, done before the freeze; also a use the bundler cannot drop (zod's package says it has no side effects). */
export const sharedZod: typeof z = z;
sharedZod.object({ warmUp: sharedZod.string().min(1) }).strict();
