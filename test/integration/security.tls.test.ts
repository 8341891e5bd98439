// TLS (issue 39 §4): the API serves HTTPS when given TLS_CERT_FILE and TLS_KEY_FILE, and the
// Temporal connection speaks TLS when the standard TEMPORAL_TLS_* variables (read by
// @temporalio/envconfig) say so. Certificates are made here with openssl: a throwaway CA and a
// server certificate it signed, for 127.0.0.1 and localhost.
//
// The Temporal CLI v1.5.1 dev server has no TLS flags (`temporal server start-dev --help`), and
// no `temporal-server` is built on this machine, so the TLS endpoint Temporal is reached through
// is a TLS terminator in front of the suite's dev server (ALPN h2, the bytes passed on
// unchanged): the handshake, the CA check and the server name are the client's real ones.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import { NativeConnection } from '@temporalio/worker';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { parseAdminKeys } from '../../lib/config-admin-keys.js';
import { loadConfig } from '../../lib/config.js';
import { connectClient, connectionOptions } from '../../lib/temporal.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { buildApp } from '../../server/app.js';
import { startHarness, type Harness } from '../support/harness.js';

// Test-only key, not a real credential.
const OPERATOR_KEY = 'tls-test-operator-key-00001-padded-to-32';
let dir: string;
const file = (n: string) => path.join(dir, n);
let h: Harness;
let app: FastifyInstance;
let terminator: TlsServer;
let tlsTemporal: string;

function openssl(...args: string[]) {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

/** A CA, and a server certificate (127.0.0.1, localhost) it signed; plus an unrelated key. */
function makeCertificates() {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(
    'req',
    '-x509',
    ...ec,
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    '/CN=durable-jobs test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  );
  openssl('req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost');
  writeFileSync(
    file('server.ext'),
    'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n',
  );
  openssl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.pem',
    '-days',
    '2',
    '-extfile',
    'server.ext',
  );
  openssl('req', ...ec, '-keyout', 'other.key', '-out', 'other.csr', '-subj', '/CN=other');
}

const load = (env: Record<string, string>) => loadConfig(env, { jobTypes: defaultJobRegistry.names, mode: 'production' });

function httpsGet(url: string, o: { ca?: Buffer; method?: string; headers?: Record<string, string> } = {}) {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }>((resolve, reject) => {
    const req = request(url, { method: o.method ?? 'GET', ca: o.ca, headers: o.headers }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'durable-jobs-tls-'));
  makeCertificates();
  h = await startHarness('tls', { workers: 0 });
  const config = load({ TLS_CERT_FILE: file('server.pem'), TLS_KEY_FILE: file('server.key') });
  app = buildApp({
    jobTypes: defaultJobRegistry,
    pool: h.pool,
    temporal: h.temporal,
    jobs: h.jobs,
    log: h.log,
    adminKeys: parseAdminKeys(`tess:operator=${OPERATOR_KEY}`, undefined),
    version: 'test',
    webhookSecrets: {},
    tls: { cert: config.httpTls!.cert, key: config.httpTls!.key },
  });
  await app.listen({ port: 0, host: '127.0.0.1' });

  // TLS in front of the dev server: decrypt, then pass the HTTP/2 bytes on unchanged.
  const [host, port] = inject('temporalAddress').split(':');
  terminator = createTlsServer(
    { cert: readFileSync(file('server.pem')), key: readFileSync(file('server.key')), ALPNProtocols: ['h2'] },
    (socket) => {
      const upstream = netConnect(Number(port), host === 'localhost' ? '127.0.0.1' : host);
      socket.pipe(upstream).pipe(socket);
      socket.on('error', () => upstream.destroy());
      upstream.on('error', () => socket.destroy());
    },
  );
  await new Promise<void>((r) => terminator.listen(0, '127.0.0.1', r));
  const a = terminator.address();
  tlsTemporal = `127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
});
afterAll(async () => {
  await app?.close();
  await new Promise((r) => (terminator ? terminator.close(r) : r(undefined)));
  await h?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the API over HTTPS', () => {
  it('reads TLS_CERT_FILE and TLS_KEY_FILE at start, and refuses a half-made or wrong pair naming the variables', () => {
    const c = load({ TLS_CERT_FILE: file('server.pem'), TLS_KEY_FILE: file('server.key') });
    expect(c.httpTls?.certFile).toBe(file('server.pem'));
    expect(c.sessions.secureCookie).toBe(true);
    expect(c.apiUrl).toMatch(/^https:\/\//);
    expect(load({}).httpTls).toBeUndefined();
    expect(() => load({ TLS_CERT_FILE: file('server.pem') })).toThrow(/TLS_CERT_FILE is set without TLS_KEY_FILE/);
    expect(() => load({ TLS_KEY_FILE: file('server.key') })).toThrow(/TLS_KEY_FILE is set without TLS_CERT_FILE/);
    expect(() => load({ TLS_CERT_FILE: file('server.pem'), TLS_KEY_FILE: file('other.key') })).toThrow(
      /TLS_CERT_FILE and TLS_KEY_FILE are not a usable pair/,
    );
    expect(() => load({ TLS_CERT_FILE: file('server.ext'), TLS_KEY_FILE: file('server.key') })).toThrow(/TLS_CERT_FILE: .* is not PEM/);
    expect(() => load({ TLS_CERT_FILE: file('missing.pem'), TLS_KEY_FILE: file('server.key') })).toThrow(
      /TLS_CERT_FILE: cannot read .*ENOENT/,
    );
  });

  it('serves HTTPS with the configured certificate, verified against its CA', async () => {
    const url = `https://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    const res = await httpsGet(`${url}/healthz`, { ca: readFileSync(file('ca.pem')) });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ status: 'ok' });
    // Without the CA the certificate is not trusted: it is the configured one, not a default.
    await expect(httpsGet(`${url}/healthz`)).rejects.toThrow(/self[- ]signed|unable to (get|verify)/i);
    // Plain HTTP to the TLS port is no way around it.
    const plain = await fetch(url.replace('https:', 'http:') + '/healthz').then(
      (r) => r.status,
      () => 'refused',
    );
    expect(plain).not.toBe(200);
  });

  it("a console session's cookie is Secure over TLS", async () => {
    const port = (app.server.address() as { port: number }).port;
    const res = await httpsGet(`https://127.0.0.1:${port}/v1/admin/session`, {
      ca: readFileSync(file('ca.pem')),
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR_KEY}` },
    });
    expect(res.status).toBe(201);
    const cookie = String(res.headers['set-cookie']);
    expect(cookie.split(';').map((s) => s.trim())).toEqual(expect.arrayContaining(['HttpOnly', 'SameSite=Strict', 'Secure']));
  });
});

describe('Temporal over TLS, configured through @temporalio/envconfig', () => {
  const env = () => ({
    TEMPORAL_ADDRESS: tlsTemporal,
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    TEMPORAL_TLS: 'true',
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: file('ca.pem'),
    TEMPORAL_TLS_SERVER_NAME: 'localhost',
  });

  it('the client connects with the CA from TEMPORAL_TLS_SERVER_CA_CERT_PATH and calls the server', async () => {
    const config = load(env());
    expect(config.temporalTls).toBe(true);
    const client = await connectClient(config, config.temporalAddress!);
    try {
      const info = await client.workflowService.getSystemInfo({});
      expect(info.capabilities).toBeTruthy();
      const ns = await client.workflowService.describeNamespace({ namespace: config.temporalNamespace });
      expect(ns.namespaceInfo?.name).toBe(config.temporalNamespace);
    } finally {
      await client.connection.close();
    }
  });

  it("the worker's native connection (Rust core) connects the same way", async () => {
    const config = load(env());
    const native = await NativeConnection.connect(await connectionOptions(config, config.temporalAddress!));
    try {
      const info = await native.workflowService.getSystemInfo({});
      expect(info.capabilities).toBeTruthy();
    } finally {
      await native.close();
    }
  });

  it('refuses a server its CA did not sign: TLS is verified, not only encrypted', async () => {
    const { TEMPORAL_TLS_SERVER_CA_CERT_PATH: _ca, ...noCa } = env();
    const config = load(noCa);
    const attempt = connectClient(config, config.temporalAddress!).then(async (c) => {
      try {
        await c.workflowService.getSystemInfo({});
      } finally {
        await c.connection.close();
      }
    });
    await expect(attempt).rejects.toThrow();
  });
});
