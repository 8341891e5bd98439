import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import { freePort } from '../lib/dev-server.js';

/** The shipped rules: a real Prometheus evaluates their expressions unchanged. */
const RULES = fileURLToPath(new URL('../../ops/alerts.yml', import.meta.url));

/** A Prometheus duration (`5m`, `1h30m`, `20s`, `0m`) in seconds. */
export function promDurationSeconds(d: string): number {
  const units: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3_600, d: 86_400, w: 604_800, y: 31_536_000 };
  const parts = [...d.matchAll(/(\d+)(ms|s|m|h|d|w|y)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== d) throw new Error(`not a Prometheus duration: ${d}`);
  return parts.reduce((sum, p) => sum + Number(p[1]) * units[p[2]!]!, 0);
}

type RuleFile = { groups: Array<{ name: string; rules: Array<{ alert?: string; for?: string }> }> };

/**
 * The shipped rules with every `for:` longer than `capSeconds` shortened to it, everything
 * else (expressions, labels, annotations) as shipped: a drill cannot wait 5 min per alert,
 * and the shipped `for:` of each rule is what ops/alerts.test.yml checks with promtool.
 * Returns the YAML and each alert's `for:` in seconds, as shipped and as loaded.
 */
export function capRuleFor(
  yamlText: string,
  capSeconds: number,
): { yaml: string; forSeconds: Map<string, { shipped: number; loaded: number }> } {
  const doc = parse(yamlText) as RuleFile;
  const forSeconds = new Map<string, { shipped: number; loaded: number }>();
  for (const rule of doc.groups.flatMap((g) => g.rules)) {
    if (!rule.alert) continue;
    const shipped = rule.for ? promDurationSeconds(rule.for) : 0;
    const loaded = Math.min(shipped, capSeconds);
    if (loaded < shipped) rule.for = `${loaded}s`;
    forSeconds.set(rule.alert, { shipped, loaded });
  }
  return { yaml: stringify(doc), forSeconds };
}

export interface PromAlert {
  labels: Record<string, string>;
  state: 'pending' | 'firing';
  activeAt: string;
  value: string;
}

export interface RunningPrometheus {
  url: string;
  /** Each alert's `for:` in seconds, as shipped in ops/alerts.yml and as this Prometheus loaded it. */
  forSeconds: Map<string, { shipped: number; loaded: number }>;
  /** Alerts pending or firing now (GET /api/v1/alerts). */
  alerts(): Promise<PromAlert[]>;
  /** An instant query's vector (GET /api/v1/query). */
  query(expr: string): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>>;
  /** Rule groups as loaded, with their last evaluation (GET /api/v1/rules). */
  ruleGroups(): Promise<
    Array<{ name: string; lastEvaluation: string; rules: Array<{ name: string; health: string; lastError?: string }> }>
  >;
  output(): string;
  stop(): Promise<void>;
}

export function prometheusAvailable(): boolean {
  return spawnSync('prometheus', ['--version']).status === 0;
}

/**
 * Debian's `prometheus` binary with a generated config: it scrapes `target` (host:port of the
 * API) every second and evaluates ops/alerts.yml every second, on a free loopback port, with
 * its TSDB in a temp dir that `stop()` removes after the process has exited. With
 * `forCapSeconds`, it loads a copy of the rules written into that dir in which every longer
 * `for:` is shortened to it (capRuleFor).
 */
export async function startPrometheus(target: string, o: { forCapSeconds?: number } = {}): Promise<RunningPrometheus> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'durable-jobs-prometheus-'));
  const port = await freePort();
  const config = path.join(dir, 'prometheus.yml');
  const rules = capRuleFor(await readFile(RULES, 'utf8'), o.forCapSeconds ?? Infinity);
  const rulesFile = path.join(dir, 'alerts.yml');
  await writeFile(rulesFile, rules.yaml);
  await writeFile(
    config,
    stringify({
      global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
      rule_files: [rulesFile],
      scrape_configs: [{ job_name: 'durable-jobs-api', static_configs: [{ targets: [target] }] }],
    }),
  );
  const child: ChildProcess = spawn(
    'prometheus',
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
      '--storage.tsdb.retention.time=1h',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  const keep = (b: Buffer) => {
    out = (out + b.toString()).slice(-20_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    }
    await rm(dir, { recursive: true, force: true });
  };
  const api = async <T>(p: string): Promise<T> => {
    const r = await fetch(url + p);
    const body = (await r.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`prometheus ${p}: ${body.error ?? r.status}`);
    return body.data;
  };
  try {
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`prometheus exited (${child.exitCode}): ${out.slice(-2_000)}`);
      if (
        await fetch(`${url}/-/ready`).then(
          (r) => r.ok,
          () => false,
        )
      )
        break;
      if (Date.now() > deadline) throw new Error(`prometheus not ready after 30 s: ${out.slice(-2_000)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    url,
    forSeconds: rules.forSeconds,
    alerts: async () => (await api<{ alerts: PromAlert[] }>('/api/v1/alerts')).alerts,
    query: async (expr) =>
      (
        await api<{ result: Array<{ metric: Record<string, string>; value: [number, string] }> }>(
          `/api/v1/query?query=${encodeURIComponent(expr)}`,
        )
      ).result,
    ruleGroups: async () =>
      (
        await api<{
          groups: Array<{ name: string; lastEvaluation: string; rules: Array<{ name: string; health: string; lastError?: string }> }>;
        }>('/api/v1/rules')
      ).groups,
    output: () => out,
    stop,
  };
}
