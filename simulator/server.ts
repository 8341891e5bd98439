import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { handleControl } from './control.js';
import { errorReply, headerValue, newId, send, type LogFn, type Reply } from './http.js';
import { keyDigest } from './idempotency.js';
import { createOperations } from './operations.js';
import { SimState } from './state.js';
import { TimerSet } from './timers.js';
import { handleUpstream, type UpstreamDeps } from './upstream.js';
import { createWebhookTarget } from './webhooks.js';

export interface SimulatorOptions {
  /** Port to listen on; 0 picks a random free port. */
  port: number;
  /** Interface to bind. Default '127.0.0.1'. */
  host?: string;
  /** Where transcription.completed webhooks are POSTed. Default: none, no webhooks are sent. */
  webhookUrl?: string;
  /** 'whsec_<base64>' signing secret (Standard Webhooks). Required when webhookUrl is set. */
  webhookSecret?: string;
  /** Time until a transcription completes. Default 300 ms. */
  transcriptionDelayMs?: number;
  /** Any other `POST /v1/<name>` applies a generic effect (the testing kit's upstream). Default false: 404. */
  generic?: boolean;
  /** Structured log sink. Default: silent. Request bodies and idempotency keys are never logged. */
  log?: LogFn;
}

export interface Simulator {
  url: string;
  port: number;
  close(): Promise<void>;
}

const DEFAULT_TRANSCRIPTION_DELAY_MS = 300;

interface Runtime {
  state: SimState;
  upstream: UpstreamDeps;
  background: TimerSet;
  log: LogFn;
}

function createRuntime(opts: SimulatorOptions): Runtime {
  const log = opts.log ?? (() => undefined);
  const state = new SimState();
  const background = new TimerSet();
  const webhook = opts.webhookUrl ? createWebhookTarget(opts.webhookUrl, opts.webhookSecret) : undefined;
  const delayMs = opts.transcriptionDelayMs ?? DEFAULT_TRANSCRIPTION_DELAY_MS;
  const operations = createOperations({ state, timers: background, delayMs, log, ...(webhook ? { webhook } : {}) });
  return { state, background, log, upstream: { state, operations, holds: new TimerSet(), generic: opts.generic ?? false } };
}

async function route(req: IncomingMessage, method: string, path: string, requestId: string, rt: Runtime): Promise<Reply | undefined> {
  if (path.startsWith('/__sim/')) {
    return handleControl(req, method, path, {
      state: rt.state,
      onReset: () => rt.background.cancelAll(),
      releaseHolds: (path) => rt.upstream.holds.releaseSleeps(path),
    });
  }
  if (path.startsWith('/v1/')) {
    // Counted from arrival to the last byte sent, including any held delay.
    const leave = rt.state.inFlight.enter(headerValue(req, 'x-tenant-id') || 'unknown');
    try {
      return await handleUpstream(req, method, path, requestId, rt.upstream);
    } finally {
      leave();
    }
  }
  req.resume();
  return errorReply(404, 'not_found');
}

async function handle(req: IncomingMessage, res: ServerResponse, rt: Runtime): Promise<void> {
  const started = Date.now();
  const requestId = newId('req');
  const method = req.method ?? 'GET';
  let path = '/';
  let reply: Reply | undefined;
  try {
    path = new URL(req.url ?? '/', 'http://simulator').pathname;
    reply = await route(req, method, path, requestId, rt);
  } catch (err) {
    rt.log('simulator request failed', { requestId, method, path: loggablePath(path), error: String(err) });
    reply = errorReply(500, 'internal_error');
  }
  if (!reply) {
    res.destroy();
    return;
  }
  send(res, requestId, reply);
  const key = headerValue(req, 'idempotency-key');
  rt.log('simulator request', {
    requestId,
    method,
    path: loggablePath(path),
    status: reply.status,
    tenant: headerValue(req, 'x-tenant-id'),
    keyDigest: key ? keyDigest(key) : undefined,
    durationMs: Date.now() - started,
  });
}

/** The reconciliation lookup carries the idempotency key in its path; logs get a digest. */
function loggablePath(path: string): string {
  const prefix = '/v1/idempotency/';
  return path.startsWith(prefix) ? `${prefix}<${keyDigest(path.slice(prefix.length))}>` : path;
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** Starts the provider simulator: an idempotent upstream API plus its /__sim control API. */
export async function startSimulator(opts: SimulatorOptions): Promise<Simulator> {
  const rt = createRuntime(opts);
  const server = createServer((req, res) => void handle(req, res, rt));
  const host = opts.host ?? '127.0.0.1';
  await listen(server, opts.port, host);
  const port = (server.address() as AddressInfo).port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  rt.log('simulator listening', { url });
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= new Promise<void>((resolve, reject) => {
      rt.background.cancelAll();
      rt.upstream.holds.cancelAll();
      server.close((err) => (err ? reject(err) : resolve()));
      // Keep-alive sockets (fetch pools them) would otherwise hold close() open.
      server.closeAllConnections();
    });
    return closing;
  };
  return { url, port, close };
}
