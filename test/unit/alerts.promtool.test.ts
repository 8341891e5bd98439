import { execFile, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { capRuleFor, promDurationSeconds } from '../../scripts/drill/alerts.js';

// Prometheus's own tools check ops/alerts.yml and unit-test every alert (ops/alerts.test.yml).
// promtool comes from Debian's prometheus package (.ci/run installs it).
const OPS = fileURLToPath(new URL('../../ops/', import.meta.url));
const run = promisify(execFile);
const hasPromtool = spawnSync('promtool', ['--version']).status === 0;
if (!hasPromtool) console.warn('SKIPPED ops/ promtool tests: promtool is not installed (apt-get install -y prometheus)');

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
}
interface AlertTest {
  eval_time: string;
  alertname: string;
  exp_alerts: unknown[];
}
const minutes = (d: string) => {
  const m = /^(\d+)([smh])$/.exec(d)!;
  return Number(m[1]) * { s: 1 / 60, m: 1, h: 60 }[m[2] as 's' | 'm' | 'h'];
};

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'durable-jobs-promtool-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe.skipIf(!hasPromtool)('ops/ with promtool', () => {
  it('promtool check rules ops/alerts.yml', async () => {
    const { stdout } = await run('promtool', ['check', 'rules', 'alerts.yml'], { cwd: OPS });
    expect(stdout).toMatch(/SUCCESS: \d+ rules found/);
  });

  it('promtool test rules ops/alerts.test.yml: each alert firing, silent, and pending for its whole for:', async () => {
    const { stdout } = await run('promtool', ['test', 'rules', 'alerts.test.yml'], { cwd: OPS }).catch(
      (e: { stdout: string; stderr: string }) => {
        throw new Error(`promtool test rules failed:\n${e.stdout}\n${e.stderr}`);
      },
    );
    expect(stdout).toContain('SUCCESS');

    // Every shipped alert has its cases: firing at T, and silent one evaluation (1 min) before
    // T when it has a for: (still pending), which pins the for: duration.
    const rules = (parse(await readFile(path.join(OPS, 'alerts.yml'), 'utf8')) as { groups: Array<{ rules: Rule[] }> }).groups
      .flatMap((g) => g.rules)
      .filter((r) => r.alert);
    const tests = (
      parse(await readFile(path.join(OPS, 'alerts.test.yml'), 'utf8')) as { tests: Array<{ alert_rule_test: AlertTest[] }> }
    ).tests.flatMap((t) => t.alert_rule_test);
    for (const r of rules) {
      const mine = tests.filter((t) => t.alertname === r.alert);
      const firing = mine.filter((t) => t.exp_alerts.length > 0);
      expect(firing.length, `${r.alert}: no firing case`).toBeGreaterThan(0);
      expect(
        mine.some((t) => t.exp_alerts.length === 0),
        `${r.alert}: no silent case`,
      ).toBe(true);
      if (r.for && minutes(r.for) > 0) {
        const pendingBefore = firing.some((f) =>
          mine.some((t) => t.exp_alerts.length === 0 && minutes(t.eval_time) === minutes(f.eval_time) - 1),
        );
        expect(pendingBefore, `${r.alert}: no silent case one minute before it fires (for: ${r.for})`).toBe(true);
      }
    }
  });

  it("the drill's copy of the rules (for: capped at 20 s) is valid and differs from the shipped rules only in the longer for:", async () => {
    const shipped = await readFile(path.join(OPS, 'alerts.yml'), 'utf8');
    const { yaml, forSeconds } = capRuleFor(shipped, 20);
    const file = path.join(tmp, 'drill-alerts.yml');
    await writeFile(file, yaml);
    const { stdout } = await run('promtool', ['check', 'rules', file]);
    expect(stdout).toMatch(/SUCCESS: \d+ rules found/);
    const rulesOf = (text: string) => (parse(text) as { groups: Array<{ rules: Rule[] }> }).groups.flatMap((g) => g.rules);
    const [before, after] = [rulesOf(shipped), rulesOf(yaml)];
    expect(after).toHaveLength(before.length);
    after.forEach((r, i) => {
      const { for: shippedFor, ...rest } = before[i]!;
      const { for: cappedFor, ...restCapped } = r;
      expect(restCapped).toEqual(rest);
      const s = shippedFor ? promDurationSeconds(shippedFor) : 0;
      expect(cappedFor ? promDurationSeconds(cappedFor) : 0).toBe(Math.min(s, 20));
      if (r.alert) expect(forSeconds.get(r.alert)).toEqual({ shipped: s, loaded: Math.min(s, 20) });
    });
    expect(forSeconds.get('RetryStorm')).toEqual({ shipped: 300, loaded: 20 });
    expect(forSeconds.get('DeadLetterGrowth')).toEqual({ shipped: 0, loaded: 0 });
    expect(promDurationSeconds('1h30m')).toBe(5_400);
    expect(() => promDurationSeconds('5 min')).toThrow(/not a Prometheus duration/);
  });

  it('every query of ops/grafana-dashboard.json is valid PromQL', async () => {
    const dash = JSON.parse(await readFile(path.join(OPS, 'grafana-dashboard.json'), 'utf8')) as {
      panels: Array<{ title: string; targets?: Array<{ expr: string }> }>;
    };
    const exprs = dash.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
    expect(exprs.length).toBeGreaterThan(10);
    // As recording rules, with Grafana's interval variable replaced by a duration.
    const rules = exprs.map((e, i) => ({ record: `dashboard:query_${i}`, expr: e.replaceAll('$__rate_interval', '5m') }));
    const file = path.join(tmp, 'dashboard-rules.yml');
    await writeFile(file, stringify({ groups: [{ name: 'dashboard', rules }] }));
    const { stdout } = await run('promtool', ['check', 'rules', file]).catch((e: { stdout: string; stderr: string }) => {
      throw new Error(`a dashboard query does not parse:\n${e.stdout}\n${e.stderr}`);
    });
    expect(stdout).toContain(`SUCCESS: ${exprs.length} rules found`);
  });
});
