import { maskDatabaseUrl } from '../lib/banner.js';
import type { DrillItem } from './support.js';

const OPTIONS = [
  ['--only 1,4 | 1-10', 'run only these items (numbers and ranges)'],
  ['--json FILE', 'also write the rows as JSON to FILE'],
  ['-h, --help', 'this text'],
] as const;

const ENVIRONMENT = [
  ['DATABASE_URL', 'use this Postgres instead of starting an embedded one'],
  ['TEMPORAL_ADDRESS', 'use this Temporal instead of starting a dev server'],
  ['TEMPORAL_MODE=server', 'start temporal-server on Postgres instead of the dev server (item 11 needs it)'],
  ['PROVIDER_URL', 'use this upstream instead of starting the simulator'],
  ['CI=true', 'a skipped item fails the drill'],
] as const;

/** `npm run drill -- --help`: the options, then every item with one line on what it does. */
export function drillUsage(items: readonly Pick<DrillItem, 'item' | 'about'>[]): string {
  const w = Math.max(...OPTIONS.map(([o]) => o.length), ...ENVIRONMENT.map(([e]) => e.length));
  const iw = Math.max(...items.map((i) => i.item.length));
  return [
    'usage: npm run drill [-- --only 1,4 | 1-10] [--json FILE]',
    '',
    'The pre-launch failure drill: starts its own stack (or uses the one the environment names), runs each',
    'item with real faults, prints one PASS/FAIL/SKIP row per item and exits non-zero on any FAIL.',
    '',
    'options:',
    ...OPTIONS.map(([o, d]) => `  ${o.padEnd(w)}  ${d}`),
    '',
    'environment:',
    ...ENVIRONMENT.map(([e, d]) => `  ${e.padEnd(w)}  ${d}`),
    '',
    'items:',
    ...items.map((i) => `  ${i.item.padEnd(iw)}  ${i.about}`),
  ].join('\n');
}

/**
 * What the drill starts and what it uses, said before it starts: with DATABASE_URL,
 * TEMPORAL_ADDRESS or PROVIDER_URL set it starts only its own API and workers (and what is not
 * named), and names the external parts (a database password masked).
 */
export function drillStartMessage(o: {
  databaseUrl?: string | undefined;
  temporalAddress?: string | undefined;
  providerUrl?: string | undefined;
  temporalMode: 'dev' | 'server';
  workers: number;
}): string {
  const starts: string[] = [];
  const uses: string[] = [];
  if (o.databaseUrl) uses.push(`Postgres ${maskDatabaseUrl(o.databaseUrl)} (DATABASE_URL)`);
  else starts.push('embedded Postgres');
  if (o.temporalAddress) uses.push(`Temporal ${o.temporalAddress} (TEMPORAL_ADDRESS)`);
  else starts.push(o.temporalMode === 'server' ? 'temporal-server on Postgres' : 'Temporal dev server (persistent)');
  if (o.providerUrl) uses.push(`provider ${o.providerUrl} (PROVIDER_URL)`);
  else starts.push('simulator');
  starts.push('API', `${o.workers} worker processes`);
  return `starting ${starts.join(', ')}${uses.length ? `; using ${uses.join(', ')}` : ''}`;
}
