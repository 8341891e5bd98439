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
      [...(await fetch(`${h.baseUrl}/metrics`).then((r) => r.text())).matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!),
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
});
