// The third-party servers the tests talk to, none written here: stripe-mock (Stripe's own API
// mock) and mailpit (an SMTP server with a search API). Their binaries come from the
// environment (STRIPE_MOCK_PATH, MAILPIT_PATH: `npm run test:example` builds them once into a
// cache and passes the paths). Each runs on free ports and can be stopped and started again on
// the same ports (and, for mailpit, the same database file).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { waitFor } from './wait.js';

export async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise((resolve) => srv.close(resolve));
  return port;
}

function binary(envVar: string): string {
  const p = process.env[envVar];
  if (!p)
    throw new Error(`${envVar} is not set: run the example's tests with \`npm run test:example\` in durable-jobs, or set it to the binary`);
  return p;
}

export interface ThirdPartyServer {
  /** The HTTP base URL (stripe-mock's API, mailpit's web API). */
  readonly url: string;
  start(): Promise<void>;
  /** Stops the process (SIGKILL by default: no shutdown of its own) and waits for its exit. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Stops it for good and removes its files. */
  close(): Promise<void>;
}

function server(name: string, bin: string, args: string[], url: string, ready: () => Promise<boolean>, dir?: string): ThirdPartyServer {
  let child: ChildProcess | undefined;
  let out = '';
  const stop = async (signal: NodeJS.Signals = 'SIGKILL') => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((resolve) => c.once('exit', resolve));
    c.kill(signal);
    await exited;
  };
  return {
    url,
    async start() {
      out = '';
      const c = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      child = c;
      c.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-4000)));
      c.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-4000)));
      await waitFor(`${name} to answer on ${url}`, async () => {
        if (c.exitCode !== null) throw new Error(`${name} exited (${c.exitCode}):\n${out}`);
        return (await ready().catch(() => false)) ? true : undefined;
      });
    },
    stop,
    async close() {
      await stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** stripe-mock on free HTTP and HTTPS ports; `url` is its HTTP API (set STRIPE_API_BASE to it). */
export async function startStripeMock(): Promise<ThirdPartyServer> {
  const [http, https] = [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${http}`;
  // Any answer (a 401 without a key) means it serves.
  const s = server(
    'stripe-mock',
    binary('STRIPE_MOCK_PATH'),
    ['-http-addr', `127.0.0.1:${http}`, '-https-addr', `127.0.0.1:${https}`],
    url,
    async () => {
      await fetch(`${url}/v1/payment_intents`);
      return true;
    },
  );
  await s.start();
  return s;
}

/** A message as mailpit's API lists it. */
export interface MailpitMessage {
  ID: string;
  MessageID: string;
  To: Array<{ Address: string }>;
}

export interface Mailpit extends ThirdPartyServer {
  /** `smtp://127.0.0.1:<port>`: set SMTP_URL to it. */
  readonly smtpUrl: string;
  /** Every message in the mailbox: its Message-ID and mailpit's ID. */
  messages(): Promise<MailpitMessage[]>;
}

/** mailpit on free SMTP and HTTP ports, with its database in a file of its own (kept across a stop and start). */
export async function startMailpit(): Promise<Mailpit> {
  const [smtp, http] = [await freePort(), await freePort()];
  const dir = mkdtempSync(path.join(os.tmpdir(), 'acme-mailpit-'));
  const url = `http://127.0.0.1:${http}`;
  const args = ['--smtp', `127.0.0.1:${smtp}`, '--listen', `127.0.0.1:${http}`, '--database', path.join(dir, 'mailpit.db')];
  const s = server(
    'mailpit',
    binary('MAILPIT_PATH'),
    [...args, '--max', '0', '--disable-version-check'],
    url,
    async () => (await fetch(`${url}/api/v1/messages?limit=1`)).ok,
    dir,
  );
  await s.start();
  return {
    ...s,
    smtpUrl: `smtp://127.0.0.1:${smtp}`,
    async messages() {
      const res = await fetch(`${url}/api/v1/messages?limit=10000`);
      if (!res.ok) throw new Error(`mailpit answered ${res.status}`);
      return ((await res.json()) as { messages: MailpitMessage[] }).messages;
    },
  };
}
