/**
 * `npm run test:example`: the proof that a team can use durable-jobs from its own repository.
 * Packs this package, copies `examples/acme-service/` to a scratch folder outside the
 * repository, installs the tarball there (never a path into this repository) and runs the
 * example's own tests (`durable-jobs/testing`: its own Temporal dev server and Postgres).
 * The third-party servers those tests start (stripe-mock, mailpit) are resolved first, built
 * into the cache with progress the first time, and handed over as STRIPE_MOCK_PATH and
 * MAILPIT_PATH: the example cannot import this repository's scripts.
 */
import { prepareExampleScratch } from './lib/example-scratch.js';
import { resolveThirdParty, THIRD_PARTY, type ThirdPartyName } from './lib/third-party.js';

const say = (m: string) => console.log(`[example] ${m}`);

let scratch;
try {
  for (const name of Object.keys(THIRD_PARTY) as ThirdPartyName[])
    process.env[THIRD_PARTY[name].envVar] = await resolveThirdParty(name, say);
  scratch = prepareExampleScratch(say);
  scratch.run('npm', ['test']);
} catch (err) {
  say((err as Error).message);
  process.exitCode = 1;
} finally {
  scratch?.remove();
}
