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
  /** Written with `--allow-busy` although the 1-minute load average at the start was above 1. */
  busy?: boolean;
  node: string;
  postgres: string;
  temporal: string;
  temporalKind?: string;
  settings?: Record<string, unknown>;
}

export interface BenchResults {
  /** The capacity table (markdown) derived from the per-job costs; null without the throughput section. */
  capacity?: string | null;
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
  const rs = r.ratioSpread;
  return `${r.ratio.toFixed(2)}x${rs && rs.samples.length > 1 ? ` [${rs.min.toFixed(2)}-${rs.max.toFixed(2)}]` : ''}`;
}

function cells(r: BenchRow): string[] {
  const base = r.baseline ? `${fmt(r.baseline.value, r.baseline.unit)} (${r.baseline.label})` : '-';
  const value = r.skipped ? r.skipped : fmt(r.value, r.unit);
  return [r.section, r.figure, value, base, ratioText(r), r.notes ?? ''];
}

const HEAD = ['section', 'figure', 'value: median [min-max]', 'baseline: median [min-max]', 'ratio: median of paired [min-max]', 'notes'];

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
  if (res.capacity) lines.push('', 'Capacity from the per-job costs:', res.capacity);
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

/** The conditions paragraph of the README, from the run it describes. */
export function conditionsText(res: BenchResults): string {
  const m = res.meta;
  const la = (l: number[]) => l.map(num).join('/');
  const busyStart = m.loadAverage.start[0]! > m.cores * 0.5;
  const busyEnd = m.loadAverage.end[0]! > m.cores;
  const settings = Object.entries(m.settings ?? {})
    .map(([k, v]) => `${k}: ${String(v)}`)
    .join('; ');
  return [
    `This run started ${m.startedAt} and took ${Math.round(m.durationSec)} s (${m.mode}) on ${m.cores} cores (${m.cpuModel}) with ${m.memoryGb} GB RAM, node ${m.node}.`,
    `${m.busy ? 'BUSY (written with --allow-busy): ' : ''}The load average (1/5/15 min) was ${la(m.loadAverage.start)} at the start and ${la(m.loadAverage.end)} at the end` +
      `${busyStart ? ': the machine was already busy when it started, so absolute figures are low; read the paired ratios' : ''}` +
      `${!busyStart && busyEnd ? " (the end figure includes the bench's own stack: Postgres, the Temporal server, worker children)" : ''}.`,
    `Server: ${m.postgres}; ${m.temporal}.`,
    `Settings: ${settings || '-'}.`,
    `${res.errors.length === 0 ? 'Every section finished without errors.' : `${res.errors.length} section(s) failed: ${res.errors.map((e) => e.section).join(', ')}.`}`,
  ].join(' ');
}

/** Replaces the text between the README's `<!-- name:start -->` / `<!-- name:end -->` markers; leaves the rest alone. */
export async function updateReadme(file: string, table: string, name = 'bench-results'): Promise<boolean> {
  const START = `<!-- ${name}:start -->`;
  const END = `<!-- ${name}:end -->`;
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
