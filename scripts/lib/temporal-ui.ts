// The Temporal Web UI beside temporal-server (issue 40 §1): the UI server v2.54.1
// (`go install github.com/temporalio/ui-server/v2/cmd/server@v2.54.1`, about a minute cold; its
// assets are embedded), resolved like the other Go binaries (go-binary.ts). The CLI v1.5.1's dev
// server brings UI 2.42.1 with it; this one adds the task-failure view and the activity pause,
// unpause and reset buttons. It talks gRPC to any frontend, so it also runs beside the dev server.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { signalGroup, trackChild, untrackChild, withParentDeathSignal } from './child-cleanup.js';
import { resolveGoBinary, type GoBinarySpec } from './go-binary.js';

export const TEMPORAL_UI_VERSION = 'v2.54.1';

const UI_SPEC: GoBinarySpec = {
  name: 'temporal-ui-server',
  label: 'Temporal Web UI server',
  goPackage: 'github.com/temporalio/ui-server/v2/cmd/server',
  version: TEMPORAL_UI_VERSION,
  cacheDir: 'temporal-ui-server',
  envVar: 'TEMPORAL_UI_SERVER_PATH',
  buildHint: 'about 1-3 minutes on 2 cores the first time',
};

export function resolveTemporalUiServer(o: { path?: string; log: (m: string) => void; allowGoInstall?: boolean }): Promise<string> {
  return resolveGoBinary(UI_SPEC, { explicitPath: o.path, log: o.log, allowGoInstall: o.allowGoInstall });
}

export interface TemporalUi {
  url: string;
  stop(): Promise<void>;
}

/** The UI's configuration: loopback only, the frontend it shows, nothing else of the defaults' (no CORS for other origins). */
export function renderUiConfig(o: { temporalAddress: string; port: number; namespace: string }): string {
  return [
    `temporalGrpcAddress: ${o.temporalAddress}`,
    'host: 127.0.0.1',
    `port: ${o.port}`,
    'enableUi: true',
    `defaultNamespace: ${o.namespace}`,
    'disableNewsFetch: true',
    'cors:',
    '  cookieInsecure: true',
    '  allowOrigins: []',
    '',
  ].join('\n');
}

/** Starts the UI server (config under `rootDir/config`), waits until it answers, and says where. */
export async function startTemporalUi(o: {
  binary: string;
  rootDir: string;
  temporalAddress: string;
  port: number;
  namespace: string;
  timeoutMs?: number;
}): Promise<TemporalUi> {
  await fs.mkdir(path.join(o.rootDir, 'config'), { recursive: true });
  await fs.writeFile(path.join(o.rootDir, 'config', 'durable-jobs.yaml'), renderUiConfig(o));
  const [cmd, args] = withParentDeathSignal(
    o.binary,
    ['--root', o.rootDir, '--config', 'config', '--env', 'durable-jobs', 'start'],
    'TERM',
  );
  const child: ChildProcess = spawn(cmd, args, { detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
  trackChild(child, 'SIGTERM');
  let stderr = '';
  child.stderr?.on('data', (b: Buffer) => {
    stderr = (stderr + b.toString('utf8')).slice(-2_000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${o.port}`;
  const stop = async () => {
    untrackChild(child);
    if (child.exitCode === null && child.signalCode === null) signalGroup(child, 'SIGTERM');
    await exited;
  };
  const deadline = Date.now() + (o.timeoutMs ?? 30_000);
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the Temporal UI server exited (${child.exitCode}): ${stderr.trim().slice(-500)}`);
    const ok = await fetch(`${url}/api/v1/settings`)
      .then((r) => r.ok)
      .catch(() => false);
    if (ok) return { url, stop };
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`the Temporal UI server did not answer on ${url} within ${o.timeoutMs ?? 30_000} ms: ${stderr.trim().slice(-500)}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}
