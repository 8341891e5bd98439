import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { startHarness, type Harness } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('health-alerts', { workers: 0 });
});
afterAll(async () => {
  await h?.close();
});

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

describe('ops/alerts.yml', () => {
  it('parses as Prometheus rule groups whose expressions name metrics that /metrics exports', async () => {
    const text = await readFile(fileURLToPath(new URL('../../ops/alerts.yml', import.meta.url)), 'utf8');
    const doc = parse(text) as { groups: Array<{ name: string; rules: Rule[] }> };
    const rules = doc.groups.flatMap((g) => g.rules);
    // Every metric family is declared (# TYPE) even before it has samples.
    const exported = new Set(
      [...(await fetch(`${h.opsUrl}/metrics`).then((r) => r.text())).matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!),
    );

    // The list: backlog age, no completions while the backlog grows, lease expirations
    // spike, dead-letter growth, oldest dead letter age, outbox lag.
    const required = [
      'JobBacklogAgeHigh',
      'NoCompletionsWhileBacklogGrows',
      'LeaseExpirationsSpike',
      'DeadLetterGrowth',
      'DeadLetterUnattended',
      'OutboxLag',
    ];
    const names = rules.map((r) => r.alert);
    for (const want of required) expect(names).toContain(want);
    expect(new Set(names).size).toBe(names.length);

    for (const r of rules) {
      expect(r.alert, JSON.stringify(r)).toMatch(/^[A-Z][A-Za-z]+$/);
      expect(typeof r.expr).toBe('string');
      if (r.for !== undefined) expect(r.for).toMatch(/^\d+[smh]$/);
      expect(r.labels?.severity).toMatch(/^(page|warning|info)$/);
      expect(r.annotations?.summary).toBeTruthy();
      const used = [...r.expr.matchAll(/\b(durable_jobs_[a-z0-9_]+)\b/g)].map((m) => m[1]!);
      expect(used.length, `${r.alert} names no durable_jobs metric`).toBeGreaterThan(0);
      for (const m of used) expect(exported.has(m), `${r.alert}: ${m} is not exported by /metrics`).toBe(true);
    }
  });

  it('the Grafana dashboard (ops/grafana-dashboard.json) queries only metrics that /metrics exports', async () => {
    const dash = JSON.parse(await readFile(fileURLToPath(new URL('../../ops/grafana-dashboard.json', import.meta.url)), 'utf8')) as {
      panels: Array<{ type: string; title: string; targets?: Array<{ expr: string }> }>;
    };
    const text = await fetch(`${h.opsUrl}/metrics`).then((r) => r.text());
    // Exported: every declared family and every sample name (a histogram's _bucket, _sum, _count).
    const exported = new Set([...text.matchAll(/^# TYPE (\S+) /gm), ...text.matchAll(/^([a-zA-Z_:][\w:]*)(?=[{ ])/gm)].map((m) => m[1]!));
    expect(
      metricNames('histogram_quantile(0.95, max by (job_type, le) (rate(a_bucket{window="5m"}[$__rate_interval]))) * 60 / on () b'),
    ).toEqual(['a_bucket', 'b']);
    const graphs = dash.panels.filter((p) => p.type !== 'row');
    expect(graphs.length).toBeGreaterThan(10);
    for (const p of graphs) {
      expect(p.targets?.length, `${p.title} has no query`).toBeGreaterThan(0);
      for (const t of p.targets!) {
        const names = metricNames(t.expr);
        expect(names.length, `${p.title}: ${t.expr} names no metric`).toBeGreaterThan(0);
        for (const n of names) expect(exported.has(n), `${p.title}: ${n} is not exported by /metrics`).toBe(true);
      }
    }
  });
});

/** Metric names in a PromQL expression: identifiers that are not functions, keywords, label names or durations. */
const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'inf',
  'nan',
]);
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""') // label values
    .replace(/\{[^}]*\}/g, '') // label matchers
    .replace(/\[[^\]]*\]/g, '') // ranges, including $__rate_interval
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ''); // grouping label lists
  return [...bare.matchAll(/(?<![\w.$])([a-zA-Z_:][\w:]*)\b(?!\s*\()/g)].map((m) => m[1]!).filter((n) => !KEYWORDS.has(n.toLowerCase()));
}
