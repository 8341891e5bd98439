import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { freePort } from '../lib/dev-server.js';

/** The shipped rules, evaluated as they are by a real Prometheus. */
const RULES = fileURLToPath(new URL('../../ops/alerts.yml', import.meta.url));

export interface PromAlert {
  labels: Record<string, string>;
  state: 'pending' | 'firing';
  activeAt: string;
  value: string;
}

export interface RunningPrometheus {
  url: string;
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
 * its TSDB in a temp dir that `stop()` removes after the process has exited.
 */
export async function startPrometheus(target: string): Promise<RunningPrometheus> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'durable-jobs-prometheus-'));
  const port = await freePort();
  const config = path.join(dir, 'prometheus.yml');
  await writeFile(
    config,
    stringify({
      global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
      rule_files: [RULES],
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
