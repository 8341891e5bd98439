/**
 * `ADMIN_API_KEYS`: the operators' keys, each naming its operator, its role and, optionally, the
 * tenants it is limited to. Parsed once at start (lib/config.ts is the only reader of the
 * environment); every key is hashed here, so raw keys live nowhere past configuration.
 *
 * Syntax (entries separated by commas):
 *
 *     name[:role[@tenant[,tenant...]]]=key[|key...]
 *
 *     alice=k1|k2                      admin (no role: every key configured before roles existed keeps every right)
 *     victor:viewer=k3                 reads only; no inputs, results or payloads
 *     bob:operator@acme,globex=k4      replay, discard, cancel, pause; only acme's and globex's jobs
 *     root:admin=sha256:<64 hex>       a key given as the hex SHA-256 of the key
 *
 * A tenant list is allowed only after a role (`@` alone is part of a name: operator names may be
 * e-mail addresses). Several keys per operator overlap during a rotation (README / docs/security.md).
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ConfigError } from './errors.js';
import { MIN_CONFIGURED_KEY_LENGTH } from './ids.js';

/** Least to most: each role may do everything the roles before it may. */
export const ROLES = ['viewer', 'operator', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/**
 * One admin key of a named operator, as the server keeps it: the SHA-256 of the key (hex),
 * never the key. Every audit row names `operator`. `tenants` undefined: every tenant.
 */
export interface OperatorKey {
  operator: string;
  keyHash: string;
  /** Default `admin` (a key configured without a role). */
  role?: Role;
  /** The tenants whose jobs this key sees and acts on; undefined: all, and the routes that span every tenant. */
  tenants?: readonly string[];
}

const OPERATOR_NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;
const TENANT_ID = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const KEY_DIGEST = /^sha256:([0-9a-f]{64})$/;
export const keyDigest = (key: string) => createHash('sha256').update(key).digest('hex');

const VAR = 'ADMIN_API_KEYS';
const SYNTAX = `${VAR} must be "operator=key[|key...],..." where operator is name[:role[@tenant,...]]`;

const ENTRY = z.object({
  operator: z.string().regex(OPERATOR_NAME, 'operator names are 1-64 of A-Z a-z 0-9 . _ @ - (starting with a letter or digit)'),
  role: z.enum(ROLES, { error: `the role must be one of ${ROLES.join(', ')} (none: admin)` }).optional(),
  tenants: z
    .array(z.string().regex(TENANT_ID, 'tenant IDs are a-z, 0-9, _ and - (1-63, starting with a letter or digit)'))
    .min(1, 'list at least one tenant after "@", or leave "@" out for every tenant')
    .optional(),
  keys: z
    .array(
      z
        .string()
        .refine(
          (k) => KEY_DIGEST.test(k) || k.length >= MIN_CONFIGURED_KEY_LENGTH,
          `each key must be at least ${MIN_CONFIGURED_KEY_LENGTH} characters (e.g. a dj_op_ key: durable-jobs keygen), or sha256:<64 hex digits>`,
        ),
    )
    .min(1, 'give at least one key after "="'),
});

/**
 * The raw entries: split on commas, except that the commas of a tenant list (`:role@a,b=key`)
 * stay inside their entry: a piece without "=" continues the previous one only when that one
 * is still inside a tenant list.
 */
function entries(raw: string): string[] {
  const out: string[] = [];
  let open: string | undefined;
  for (const piece of raw.split(',')) {
    const joined = open === undefined ? piece : `${open},${piece}`;
    if (joined.includes('=')) {
      out.push(joined);
      open = undefined;
    } else if (/^[^:=]+:[a-z]*@/i.test(joined.trim())) {
      open = joined;
    } else {
      throw new ConfigError(`${SYNTAX}: "${joined.trim().slice(0, 64)}" has no "=key"`);
    }
  }
  if (open !== undefined) throw new ConfigError(`${SYNTAX}: "${open.trim().slice(0, 64)}" has no "=key"`);
  return out;
}

function parseEntry(entry: string): z.infer<typeof ENTRY> {
  const eq = entry.indexOf('=');
  const head = entry.slice(0, eq).trim();
  const colon = head.indexOf(':');
  const name = colon < 0 ? head : head.slice(0, colon);
  const scope = colon < 0 ? undefined : head.slice(colon + 1);
  const at = scope?.indexOf('@') ?? -1;
  const candidate = {
    operator: name,
    role: scope === undefined ? undefined : at < 0 ? scope : scope.slice(0, at),
    tenants:
      scope === undefined || at < 0
        ? undefined
        : scope
            .slice(at + 1)
            .split(',')
            .map((t) => t.trim())
            .filter((t) => t !== ''),
    keys: entry
      .slice(eq + 1)
      .split('|')
      .map((k) => k.trim()),
  };
  const r = ENTRY.safeParse(candidate);
  if (!r.success) {
    const i = r.error.issues[0]!;
    const who = OPERATOR_NAME.test(name) ? `operator "${name}"` : 'an entry';
    throw new ConfigError(`${VAR}: ${who}: ${String(i.path[0] ?? 'entry')}: ${i.message} (${SYNTAX})`);
  }
  return r.data;
}

/**
 * `ADMIN_API_KEYS` plus `ADMIN_API_KEY` (the key of operator "admin", role admin, every tenant).
 * A key names one operator; an operator is listed once (its keys separated by `|`).
 */
export function parseAdminKeys(raw: string, legacyKey: string | undefined): OperatorKey[] {
  const out: OperatorKey[] = [];
  const add = (k: Omit<OperatorKey, 'keyHash'>, key: string) => {
    const digest = KEY_DIGEST.exec(key)?.[1] ?? keyDigest(key);
    const owner = out.find((o) => o.keyHash === digest);
    if (owner && owner.operator !== k.operator)
      throw new ConfigError(`${VAR}: one key is listed for both "${owner.operator}" and "${k.operator}"; a key names one operator`);
    if (!owner) out.push({ ...k, keyHash: digest });
  };
  const seen = new Set<string>();
  for (const entry of raw.trim() === '' ? [] : entries(raw)) {
    const e = parseEntry(entry);
    if (seen.has(e.operator)) throw new ConfigError(`${VAR}: operator "${e.operator}" is listed twice; list its keys once, separated by |`);
    seen.add(e.operator);
    // No role given: admin, left implicit (a configuration from before roles reads as it did).
    const grant = { ...(e.role ? { role: e.role } : {}), ...(e.tenants ? { tenants: [...new Set(e.tenants)] } : {}) };
    for (const key of e.keys) add({ operator: e.operator, ...grant }, key);
  }
  if (legacyKey !== undefined) add({ operator: 'admin' }, legacyKey);
  return out;
}
