// ADMIN_API_KEYS with roles and tenant scopes: the parser is pure (no I/O), so a unit test.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseAdminKeys } from '../../lib/config-admin-keys.js';
import { loadConfig } from '../../lib/config.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { redactForViewer, REDACTED, roleAllows } from '../../server/roles.js';

const sha = (k: string) => createHash('sha256').update(k).digest('hex');
const K = (n: number) => `test-key-of-at-least-32-characters-${String(n).padStart(2, '0')}`;

describe('ADMIN_API_KEYS roles and tenant scopes', () => {
  it('a key without a role stays an admin for every tenant (backward compatible), exactly as before roles', () => {
    expect(parseAdminKeys(`alice=${K(1)}|${K(2)}`, undefined)).toEqual([
      { operator: 'alice', keyHash: sha(K(1)) },
      { operator: 'alice', keyHash: sha(K(2)) },
    ]);
    expect(parseAdminKeys('', K(3))).toEqual([{ operator: 'admin', keyHash: sha(K(3)) }]);
  });

  it('reads a role, and a tenant list after it (commas inside the list stay in the entry)', () => {
    const keys = parseAdminKeys(
      `victor:viewer=${K(1)},bob:operator@acme,globex=${K(2)}|sha256:${sha(K(3))},root:admin=${K(4)},ops@example.com:operator@acme=${K(5)}`,
      undefined,
    );
    expect(keys).toEqual([
      { operator: 'victor', role: 'viewer', keyHash: sha(K(1)) },
      { operator: 'bob', role: 'operator', tenants: ['acme', 'globex'], keyHash: sha(K(2)) },
      { operator: 'bob', role: 'operator', tenants: ['acme', 'globex'], keyHash: sha(K(3)) },
      { operator: 'root', role: 'admin', keyHash: sha(K(4)) },
      { operator: 'ops@example.com', role: 'operator', tenants: ['acme'], keyHash: sha(K(5)) },
    ]);
    // An e-mail address without a role is a name, not a scope.
    expect(parseAdminKeys(`ops@example.com=${K(6)}`, undefined)).toEqual([{ operator: 'ops@example.com', keyHash: sha(K(6)) }]);
  });

  it('refuses what it cannot read, naming the variable, the operator and the part', () => {
    const load = (v: string) => () => loadConfig({ ADMIN_API_KEYS: v }, { jobTypes: defaultJobRegistry.names, mode: 'production' });
    expect(load(`alice:superuser=${K(1)}`)).toThrow(
      /ADMIN_API_KEYS: operator "alice": role: the role must be one of viewer, operator, admin/,
    );
    expect(load(`alice:=${K(1)}`)).toThrow(/operator "alice": role/);
    expect(load(`bob:operator@=${K(1)}`)).toThrow(/operator "bob": tenants: list at least one tenant/);
    expect(load(`bob:operator@Acme!=${K(1)}`)).toThrow(/operator "bob": tenants: tenant IDs are a-z/);
    expect(load(`bob:operator@acme,globex`)).toThrow(/ADMIN_API_KEYS must be "operator=key.*"bob:operator@acme,globex" has no "=key"/);
    expect(load(`alice,bob=${K(1)}`)).toThrow(/"alice" has no "=key"/);
    expect(load(`bob:viewer=short`)).toThrow(/operator "bob": keys: each key must be at least 32 characters/);
    expect(load(`bob:viewer=${K(1)},bob:admin=${K(2)}`)).toThrow(/operator "bob" is listed twice/);
  });

  it('ranks the roles: each may do what the ones before it may', () => {
    expect(roleAllows('admin', 'viewer')).toBe(true);
    expect(roleAllows('operator', 'operator')).toBe(true);
    expect(roleAllows('operator', 'admin')).toBe(false);
    expect(roleAllows('viewer', 'operator')).toBe(false);
  });

  it("a viewer's copy of an admin read has no input, result or payload at any depth", () => {
    const read = {
      jobs: [{ jobId: 'j', result: { text: 'secret summary' }, staleResult: { result: 1 }, tags: { a: 'b' } }],
      input: 'x',
      n: null,
    };
    expect(redactForViewer(read)).toEqual({
      jobs: [{ jobId: 'j', result: REDACTED, staleResult: REDACTED, tags: { a: 'b' } }],
      input: REDACTED,
      n: null,
    });
    expect(JSON.stringify(redactForViewer(read))).not.toContain('secret summary');
  });
});
