import { describe, expect, it } from 'vitest';
import { drillExitCode, parseOnly, type DrillRow } from '../../scripts/drill/report.js';

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
