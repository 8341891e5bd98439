// The Temporal connection is read the way the Temporal CLI and SDKs read it
// (@temporalio/envconfig): a TOML profile under the standard TEMPORAL_* variables. Reads
// files (a profile, a client certificate), hence an integration test; it needs no server.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { ConfigError } from '../../lib/errors.js';
import { connectionOptions } from '../../lib/temporal.js';
import { defaultJobRegistry } from '../../jobs/index.js';

let dir: string;
let file: string;
beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'durable-jobs-profile-'));
  file = path.join(dir, 'temporal.toml');
  // Test-only values, not real credentials.
  await fs.writeFile(path.join(dir, 'client.pem'), 'test-cert');
  await fs.writeFile(path.join(dir, 'client.key'), 'test-key');
  await fs.writeFile(
    file,
    [
      '[profile.default]',
      'address = "default.example:7233"',
      'namespace = "ns-default"',
      '',
      '[profile.cloud]',
      'address = "my-ns.a1b2c.tmprl.cloud:7233"',
      'namespace = "my-ns.a1b2c"',
      'api_key = "test-api-key"',
      '',
      '[profile.mtls]',
      'address = "temporal.internal:7233"',
      'namespace = "jobs"',
      '[profile.mtls.tls]',
      `client_cert_path = "${path.join(dir, 'client.pem')}"`,
      `client_key_path = "${path.join(dir, 'client.key')}"`,
      '',
    ].join('\n'),
  );
});
afterAll(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

const base = () => ({ HOME: dir, TEMPORAL_CONFIG_FILE: file });

describe('Temporal connection from a profile and the standard variables', () => {
  it('an API-key profile gives address, namespace, API key and TLS', async () => {
    const c = loadConfig({ ...base(), TEMPORAL_PROFILE: 'cloud' }, { jobTypes: defaultJobRegistry.names, mode: 'production' });
    expect(c.temporalAddress).toBe('my-ns.a1b2c.tmprl.cloud:7233');
    expect(c.temporalNamespace).toBe('my-ns.a1b2c');
    expect(await connectionOptions(c, c.temporalAddress!)).toMatchObject({
      address: 'my-ns.a1b2c.tmprl.cloud:7233',
      apiKey: 'test-api-key',
      tls: true,
    });
  });

  it('an mTLS profile reads the client certificate pair', async () => {
    const c = loadConfig({ ...base(), TEMPORAL_PROFILE: 'mtls' }, { jobTypes: defaultJobRegistry.names, mode: 'production' });
    const o = await connectionOptions(c, c.temporalAddress!);
    const tls = o.tls as { clientCertPair?: { crt: Buffer; key: Buffer } };
    // Buffers, not Uint8Arrays: the client Connection (grpc-js) refuses anything else.
    expect(Buffer.isBuffer(tls.clientCertPair?.crt) && Buffer.isBuffer(tls.clientCertPair?.key)).toBe(true);
    expect(tls.clientCertPair?.crt.toString()).toBe('test-cert');
    expect(tls.clientCertPair?.key.toString()).toBe('test-key');
  });

  it('variables override the profile; the earlier TEMPORAL_TLS_CERT_PATH names still work', async () => {
    const c = loadConfig(
      {
        ...base(),
        TEMPORAL_ADDRESS: 'other.example:7233',
        TEMPORAL_NAMESPACE: 'other',
        TEMPORAL_TLS_CERT_PATH: path.join(dir, 'client.pem'),
        TEMPORAL_TLS_KEY_PATH: path.join(dir, 'client.key'),
        TEMPORAL_GRPC_META_X_TEAM: 'jobs',
      },
      { jobTypes: defaultJobRegistry.names, mode: 'production' },
    );
    expect(c.temporalAddress).toBe('other.example:7233');
    expect(c.temporalNamespace).toBe('other');
    const o = await connectionOptions(c, c.temporalAddress!);
    expect((o.tls as { clientCertPair?: { crt: Buffer } }).clientCertPair?.crt.toString()).toBe('test-cert');
    expect(o.metadata).toMatchObject({ 'x-team': 'jobs' });
  });

  it('dev mode (npm start) reads no profile file unless asked to', () => {
    const home = { HOME: dir, XDG_CONFIG_HOME: dir };
    // The default profile file, as a developer may have one: ~/.config/temporalio/temporal.toml.
    return fs
      .mkdir(path.join(dir, 'temporalio'), { recursive: true })
      .then(() => fs.copyFile(file, path.join(dir, 'temporalio', 'temporal.toml')))
      .then(() => {
        expect(loadConfig(home, { jobTypes: defaultJobRegistry.names, mode: 'dev' }).temporalAddress).toBeUndefined();
        expect(loadConfig(home, { jobTypes: defaultJobRegistry.names, mode: 'production' }).temporalAddress).toBe('default.example:7233');
        expect(
          loadConfig({ ...home, TEMPORAL_PROFILE: 'cloud' }, { jobTypes: defaultJobRegistry.names, mode: 'dev' }).temporalAddress,
        ).toBe('my-ns.a1b2c.tmprl.cloud:7233');
      });
  });

  it('a missing profile or certificate stops the process with what is wrong', () => {
    expect(() => loadConfig({ ...base(), TEMPORAL_PROFILE: 'nope' }, { jobTypes: defaultJobRegistry.names, mode: 'production' })).toThrow(
      ConfigError,
    );
    expect(() => loadConfig({ ...base(), TEMPORAL_PROFILE: 'nope' }, { jobTypes: defaultJobRegistry.names, mode: 'production' })).toThrow(
      /Profile 'nope' not found/,
    );
    expect(() =>
      loadConfig(
        {
          HOME: dir,
          TEMPORAL_TLS_CLIENT_CERT_PATH: path.join(dir, 'missing.pem'),
          TEMPORAL_TLS_CLIENT_KEY_PATH: path.join(dir, 'client.key'),
        },
        { jobTypes: defaultJobRegistry.names, mode: 'production' },
      ),
    ).toThrow(/missing\.pem/);
  });
});
