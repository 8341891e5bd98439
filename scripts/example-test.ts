/**
 * `npm run test:example`: the proof that a team can use durable-jobs from its own repository.
 * Packs this package, copies `examples/acme-service/` to a scratch folder outside the
 * repository, installs the tarball there (never a path into this repository) and runs the
 * example's own tests (`durable-jobs/testing`: its own Temporal dev server and Postgres).
 */
import { prepareExampleScratch } from './lib/example-scratch.js';

const say = (m: string) => console.log(`[example] ${m}`);

let scratch;
try {
  scratch = prepareExampleScratch(say);
  scratch.run('npm', ['test']);
} catch (err) {
  say((err as Error).message);
  process.exitCode = 1;
} finally {
  scratch?.remove();
}
