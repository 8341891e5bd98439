import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const RULES = fileURLToPath(new URL('../../ops/alerts.yml', import.meta.url));

export interface AlertRule { alert: string; expr: string; for?: string }

export async function loadAlertRules(): Promise<AlertRule[]> {
  const doc = parse(await readFile(RULES, 'utf8')) as { groups: Array<{ rules: AlertRule[] }> };
  return doc.groups.flatMap((g) => g.rules.filter((r) => r.alert));
}

interface Sample { name: string; labels: Record<string, string>; value: number }

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
  const m = /^(max|min)(?: by \(([^)]*)\))? \((\w+)(?:\{([^}]*)\})?\) (>|<|>=|<=|==) (-?[\d.]+)$/.exec(expr.trim());
  if (!m) return undefined;
  const [, agg, , metric, selector, op, threshold] = m;
  const want = [...(selector ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1]!, x[2]!] as const);
  const values = samples.filter((s) => s.name === metric && want.every(([k, v]) => s.labels[k] === v)).map((s) => s.value);
  if (values.length === 0) return { value: NaN, firing: false };
  const value = agg === 'max' ? Math.max(...values) : Math.min(...values);
  const t = Number(threshold);
  const firing = op === '>' ? value > t : op === '<' ? value < t : op === '>=' ? value >= t : op === '<=' ? value <= t : value === t;
  return { value, firing };
}
