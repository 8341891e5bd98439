// Printing and writing the results: a terminal table, results.json, and the README's table
// (between its results markers).
import fs from 'node:fs/promises';
import type { BenchRow, Spread } from './stats.js';

export interface BenchMeta {
  startedAt: string;
  durationSec: number;
  mode: 'full' | 'quick';
  cores: number;
  cpuModel: string;
  memoryGb: number;
  loadAverage: { start: number[]; end: number[] };
  node: string;
  postgres: string;
  temporal: string;
}

export interface BenchResults {
  meta: BenchMeta;
  rows: BenchRow[];
  errors: Array<{ section: string; message: string }>;
}

function num(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  const a = Math.abs(n);
  return a >= 100 ? n.toFixed(0) : a >= 10 ? n.toFixed(1) : n.toFixed(2);
}

function fmt(s: Spread | null | undefined, unit: string): string {
  if (!s) return '-';
  const range = s.samples.length > 1 ? ` [${num(s.min)}-${num(s.max)}]` : '';
  return `${num(s.median)}${unit ? ` ${unit}` : ''}${range}`;
}

function ratioText(r: BenchRow): string {
  if (r.skipped) return 'skipped';
  if (r.ratio === null) return '-';
  return `${r.ratio.toFixed(2)}x`;
}

function cells(r: BenchRow): string[] {
  const base = r.baseline ? `${fmt(r.baseline.value, r.baseline.unit)} (${r.baseline.label})` : '-';
  const value = r.skipped ? r.skipped : fmt(r.value, r.unit);
  return [r.section, r.figure, value, base, ratioText(r), r.notes ?? ''];
}

const HEAD = ['section', 'figure', 'value: median [min-max]', 'baseline: median [min-max]', 'ratio', 'notes'];

export function terminalTable(res: BenchResults): string {
  const m = res.meta;
  const lines = [
    `durable-jobs bench (${m.mode}) on ${m.cores} cores (${m.cpuModel}), ${m.memoryGb} GB; load average at start ${m.loadAverage.start.map(num).join(' ')}, at end ${m.loadAverage.end.map(num).join(' ')}`,
    `${m.postgres}; ${m.temporal}; node ${m.node}; ${Math.round(m.durationSec)} s`,
    'ratio = value / baseline median (throughput: higher is better; latency and memory: lower is better). Spread: min-max over repeats.',
    '',
  ];
  for (const r of res.rows) {
    const [section, figure, value, base, ratio, notes] = cells(r);
    lines.push(`[${section}] ${figure}`);
    lines.push(`    ${value}   vs   ${base}   => ${ratio}${notes ? `   (${notes})` : ''}`);
  }
  for (const e of res.errors) lines.push(`ERROR [${e.section}] ${e.message}`);
  return lines.join('\n');
}

export function markdownTable(res: BenchResults): string {
  const m = res.meta;
  const esc = (s: string) => s.replace(/\|/g, '\\|');
  const out = [
    `Run ${m.startedAt} (${m.mode}, ${Math.round(m.durationSec)} s): ${m.cores} cores (${m.cpuModel}), ${m.memoryGb} GB RAM, load average ${m.loadAverage.start.map(num).join('/')} at start and ${m.loadAverage.end.map(num).join('/')} at end; ${m.postgres}; ${m.temporal}.`,
    '',
    `| ${HEAD.join(' | ')} |`,
    `| ${HEAD.map(() => '---').join(' | ')} |`,
    ...res.rows.map((r) => `| ${cells(r).map(esc).join(' | ')} |`),
  ];
  for (const e of res.errors) out.push('', `**Error** in ${e.section}: ${esc(e.message)}`);
  return out.join('\n');
}

const START = '<!-- bench-results:start -->';
const END = '<!-- bench-results:end -->';

/** Replaces the table between the README's markers; leaves the rest of the README alone. */
export async function updateReadme(file: string, table: string): Promise<boolean> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch {
    return false;
  }
  const a = text.indexOf(START);
  const b = text.indexOf(END);
  if (a < 0 || b < a) return false;
  await fs.writeFile(file, `${text.slice(0, a + START.length)}\n${table}\n${text.slice(b)}`);
  return true;
}
