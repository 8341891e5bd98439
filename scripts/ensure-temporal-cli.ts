// Makes sure a Temporal CLI binary is available (building it with `go install` the first time)
// and prints where it is. Run: npx tsx scripts/ensure-temporal-cli.ts
import { resolveTemporalCli } from './lib/temporal-cli.ts';

const log = (msg: string): void => console.log(msg);
const started = Date.now();
try {
  const cli = await resolveTemporalCli({ cliPath: process.env.TEMPORAL_CLI_PATH, log });
  const secs = Math.round((Date.now() - started) / 1000);
  if (cli) {
    console.log(`Temporal CLI ready: ${cli} (${secs}s)`);
  } else {
    console.log("no Temporal CLI found or built: the local stack will use the Temporal SDK's dev-server download (needs network access)");
  }
} catch (err) {
  console.error(`ensure-temporal-cli: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
}
