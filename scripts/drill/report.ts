import { writeFile } from 'node:fs/promises';

export type Verdict = 'PASS' | 'FAIL' | 'SKIP';
export interface DrillRow {
  item: string;
  done: string;
  observed: string;
  verdict: Verdict;
  seconds: number;
}

/** Prints the rows as a table that fits a terminal: item, verdict, time, then what was done and seen. */
export function printTable(rows: DrillRow[]): void {
  const w = Math.max(4, ...rows.map((r) => r.item.length));
  console.log(`\n${'ITEM'.padEnd(w)}  RESULT  TIME    WHAT WAS DONE → WHAT WAS OBSERVED`);
  for (const r of rows) {
    console.log(`${r.item.padEnd(w)}  ${r.verdict.padEnd(6)}  ${`${r.seconds.toFixed(1)}s`.padEnd(6)}  ${r.done}`);
    console.log(`${''.padEnd(w + 16)}→ ${r.observed}`);
  }
  const count = (v: Verdict) => rows.filter((r) => r.verdict === v).length;
  console.log(`\n${count('PASS')} passed, ${count('FAIL')} failed${count('SKIP') ? `, ${count('SKIP')} skipped` : ''}`);
}

export async function writeJson(file: string, rows: DrillRow[], meta: Record<string, unknown>): Promise<void> {
  await writeFile(file, `${JSON.stringify({ ...meta, rows }, null, 2)}\n`);
}

/**
 * `--only 1-10,12`: item numbers and ranges. Throws on anything else, so a typo cannot turn
 * into a drill that runs nothing and passes.
 */
export function parseOnly(raw: string): Set<string> {
  const out = new Set<string>();
  for (const part of raw.split(',').map((p) => p.trim())) {
    const range = /^(\d+)-(\d+)$/.exec(part);
    if (range) {
      const [from, to] = [Number(range[1]), Number(range[2])];
      if (from > to) throw new Error(`--only: range "${part}" runs backwards`);
      for (let n = from; n <= to; n++) out.add(String(n));
    } else if (/^\d+$/.test(part)) out.add(String(Number(part)));
    else throw new Error(`--only: "${part}" is not an item number or a range such as 1-10`);
  }
  return out;
}

/**
 * The drill's exit code: 1 on any FAIL. In CI (`CI` set and not "false") a SKIP fails too: an
 * item CI does not run must be left out with `--only`, not pass silently as skipped.
 */
export function drillExitCode(rows: DrillRow[], env: NodeJS.ProcessEnv = process.env): number {
  const ci = env.CI !== undefined && env.CI !== '' && env.CI !== 'false' && env.CI !== '0';
  return rows.some((r) => r.verdict === 'FAIL' || (ci && r.verdict === 'SKIP')) ? 1 : 0;
}
