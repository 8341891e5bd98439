import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const RULES = fileURLToPath(new URL('../../ops/alerts.yml', import.meta.url));

export interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
}

export async function loadAlertRules(): Promise<AlertRule[]> {
  const doc = parse(await readFile(RULES, 'utf8')) as { groups: Array<{ rules: AlertRule[] }> };
  return doc.groups.flatMap((g) => g.rules.filter((r) => r.alert));
}

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})?\s+(\S+)/.exec(line);
    if (!m || line.startsWith('#')) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

/**
 * Evaluates the simple rule shape our alert file uses, `max|min [by (l, ...)] (metric{l="v"}) op N`,
 * against one scrape: what Prometheus would compute at that instant. Returns undefined for
 * an expression outside that shape (the drill then says it could not evaluate it).
 */
export function evaluate(expr: string, samples: Sample[]): { value: number; firing: boolean } | undefined {
  const m = /^(max|min)(?:\s+by\s*\(([^)]*)\))?\s*\((\w+)(?:\{([^}]*)\})?\)\s*(>=|<=|==|>|<)\s*(-?[\d.]+)$/.exec(expr.trim());
  if (!m) return undefined;
  const [, agg, by, metric, selector, op, threshold] = m;
  const want = [...(selector ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1]!, x[2]!] as const);
  const byLabels = (by ?? '')
    .split(',')
    .map((l) => l.trim())
    .filter(Boolean);
  const groups = new Map<string, number[]>();
  for (const s of samples) {
    if (s.name !== metric || !want.every(([k, v]) => s.labels[k] === v)) continue;
    const key = byLabels.map((l) => s.labels[l] ?? '').join('\u0000');
    groups.set(key, [...(groups.get(key) ?? []), s.value]);
  }
  if (groups.size === 0) return { value: NaN, firing: false };
  const t = Number(threshold);
  const test = (v: number) => (op === '>' ? v > t : op === '<' ? v < t : op === '>=' ? v >= t : op === '<=' ? v <= t : v === t);
  // One result per group, as Prometheus computes it; the rule fires if any group passes.
  const results = [...groups.values()].map((vs) => (agg === 'max' ? Math.max(...vs) : Math.min(...vs)));
  const firing = results.filter(test);
  const value = firing.length > 0 ? firing[0]! : agg === 'max' ? Math.max(...results) : Math.min(...results);
  return { value, firing: firing.length > 0 };
}
