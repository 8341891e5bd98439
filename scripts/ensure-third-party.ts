// Makes sure the third-party servers the example's tests start (stripe-mock, mailpit, jaeger) are built
// and prints where they are. Run: npx tsx scripts/ensure-third-party.ts [stripe-mock|mailpit|jaeger ...]
import { resolveThirdParty, THIRD_PARTY, type ThirdPartyName } from './lib/third-party.ts';

const asked = process.argv.slice(2);
const names = (asked.length > 0 ? asked : Object.keys(THIRD_PARTY)) as ThirdPartyName[];
for (const name of names) {
  if (!(name in THIRD_PARTY)) {
    console.error(`ensure-third-party: unknown server "${name}" (known: ${Object.keys(THIRD_PARTY).join(', ')})`);
    process.exit(2);
  }
}
for (const name of names) {
  const started = Date.now();
  try {
    const p = await resolveThirdParty(name);
    console.log(`${name} ready: ${p} (${Math.round((Date.now() - started) / 1000)}s)`);
  } catch (err) {
    console.error(`ensure-third-party: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  }
}
