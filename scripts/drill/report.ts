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
