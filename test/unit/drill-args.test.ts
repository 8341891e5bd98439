import { describe, expect, it } from 'vitest';
import { coreItems } from '../../scripts/drill/items.js';
import { drillExitCode, parseOnly, type DrillRow } from '../../scripts/drill/report.js';
import { drillStartMessage, drillUsage } from '../../scripts/drill/usage.js';

const row = (verdict: DrillRow['verdict']): DrillRow => ({ item: '11 x', done: '', observed: '', verdict, seconds: 0 });

describe('drill item selection and verdict', () => {
  it('reads item numbers and ranges, and refuses anything else', () => {
    expect([...parseOnly('1-3,10')]).toEqual(['1', '2', '3', '10']);
    expect([...parseOnly('04')]).toEqual(['4']);
    expect(() => parseOnly('10-1')).toThrow(/backwards/);
    expect(() => parseOnly('one')).toThrow(/not an item number/);
    expect(() => parseOnly('')).toThrow(/not an item number/);
  });
  it('fails on a FAIL; in CI a SKIP fails too', () => {
    expect(drillExitCode([row('PASS'), row('SKIP')], {})).toBe(0);
    expect(drillExitCode([row('PASS'), row('FAIL')], {})).toBe(1);
    expect(drillExitCode([row('PASS'), row('SKIP')], { CI: 'true' })).toBe(1);
    expect(drillExitCode([row('PASS')], { CI: 'true' })).toBe(0);
    expect(drillExitCode([row('SKIP')], { CI: 'false' })).toBe(0);
  });
});

describe('drill --help and its start message', () => {
  it('lists every item with one line, and the options', () => {
    const help = drillUsage(coreItems);
    for (const item of coreItems) {
      const line = help.split('\n').find((l) => l.trim().startsWith(`${item.item} `));
      expect(line, item.item).toContain(item.about);
      expect(item.about.length).toBeGreaterThan(20);
    }
    expect(coreItems.map((i) => i.item.split(' ')[0])).toEqual(['1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '11', '12', '13', '14']);
    for (const option of ['--only', '--json FILE', '--help', 'DATABASE_URL', 'TEMPORAL_ADDRESS', 'PROVIDER_URL', 'CI=true'])
      expect(help).toContain(option);
  });

  it('says what it starts, and with external parts what it uses instead (password masked)', () => {
    expect(drillStartMessage({ temporalMode: 'dev', workers: 2 })).toBe(
      'starting embedded Postgres, Temporal dev server (persistent), simulator, API, 2 worker processes',
    );
    const external = drillStartMessage({
      databaseUrl: 'postgres://app:s3cret@db.internal:5432/jobs',
      temporalAddress: 'temporal.internal:7233',
      providerUrl: 'https://upstream.example',
      temporalMode: 'dev',
      workers: 2,
    });
    expect(external).toBe(
      'starting API, 2 worker processes; using Postgres postgres://app:***@db.internal:5432/jobs (DATABASE_URL), ' +
        'Temporal temporal.internal:7233 (TEMPORAL_ADDRESS), provider https://upstream.example (PROVIDER_URL)',
    );
    expect(drillStartMessage({ temporalAddress: 't:7233', temporalMode: 'server', workers: 2 })).not.toContain('temporal-server');
    expect(drillStartMessage({ temporalMode: 'server', workers: 2 })).toContain('temporal-server on Postgres');
  });
});
