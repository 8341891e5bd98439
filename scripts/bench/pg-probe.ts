// Counts what one process sends to Postgres, by wrapping `pg.Client.prototype.query` (every
// pool query and every transaction's statements go through it): round trips, time spent
// waiting for answers, and transactions (explicit BEGIN ... COMMIT, or one statement outside a
// transaction), split into those that wrote and read-only ones, and those that touched a given
// table. Statements are classified by their text (INSERT / UPDATE / DELETE / MERGE, a data-
// modifying CTE, or a lock function count as writes), which is what the product sends; the
// exact cluster-wide commit count comes from pg_stat_database beside it.
import pg from 'pg';

export interface PgCounters {
  roundTrips: number;
  /** Wall time waiting for answers, summed over statements (ms; concurrent statements add up). */
  waitMs: number;
  commits: number;
  writeCommits: number;
  /** Write transactions that touched the `effects` table (the effect ledger). */
  effectCommits: number;
  /** Wait time of the statements that wrote the `effects` table (ms), the statement's whole time even when it wrote more. */
  effectWaitMs: number;
}

const WRITE = /^\s*(insert|update|delete|merge)\b|\b(insert\s+into|update\s+\w+\s+set|delete\s+from)\b|pg_advisory|nextval\(/i;
const EFFECTS = /\b(into|update|from|join)\s+effects\b/i;

interface TxState {
  open: boolean;
  wrote: boolean;
  effects: boolean;
}

export const pgCounters: PgCounters = { roundTrips: 0, waitMs: 0, commits: 0, writeCommits: 0, effectCommits: 0, effectWaitMs: 0 };
let captured: Array<{ text: string; values?: unknown[] }> | null = null;
let installed = false;

/** Starts recording the text and parameters of every statement (for EXPLAIN); stop with the returned function. */
export function captureStatements(): () => Array<{ text: string; values?: unknown[] }> {
  const out: Array<{ text: string; values?: unknown[] }> = [];
  captured = out;
  return () => {
    captured = null;
    return out;
  };
}

export function snapshotPg(): PgCounters {
  return { ...pgCounters };
}

export function diffPg(a: PgCounters, b: PgCounters): PgCounters {
  return {
    roundTrips: b.roundTrips - a.roundTrips,
    waitMs: b.waitMs - a.waitMs,
    commits: b.commits - a.commits,
    writeCommits: b.writeCommits - a.writeCommits,
    effectCommits: b.effectCommits - a.effectCommits,
    effectWaitMs: b.effectWaitMs - a.effectWaitMs,
  };
}

function textOf(arg: unknown): string {
  if (typeof arg === 'string') return arg;
  if (arg && typeof arg === 'object' && typeof (arg as { text?: unknown }).text === 'string') return (arg as { text: string }).text;
  return '';
}

/** Idempotent; affects every pg client of this process from now on. */
export function installPgProbe(): void {
  if (installed) return;
  installed = true;
  const proto = pg.Client.prototype as unknown as { query: (...a: unknown[]) => unknown };
  const original = proto.query;
  const txOf = new WeakMap<object, TxState>();
  proto.query = function (this: object, ...args: unknown[]) {
    const text = textOf(args[0]);
    // A callback call (pg.Pool#query makes one): timed by wrapping the callback. A Submittable
    // (cursor, stream): counted, not timed.
    const cb = args.findIndex((a) => typeof a === 'function');
    const callback = cb >= 0;
    pgCounters.roundTrips++;
    if (captured && text) {
      const values = Array.isArray(args[1]) ? (args[1] as unknown[]) : (args[0] as { values?: unknown[] })?.values;
      captured.push({ text, ...(values ? { values } : {}) });
    }
    let tx = txOf.get(this);
    if (!tx) txOf.set(this, (tx = { open: false, wrote: false, effects: false }));
    const verb = /^\s*(\w+)/.exec(text)?.[1]?.toLowerCase();
    const end = (committed: boolean, wrote: boolean, effects: boolean) => {
      if (!committed) return;
      pgCounters.commits++;
      if (wrote) pgCounters.writeCommits++;
      if (wrote && effects) pgCounters.effectCommits++;
    };
    if (verb === 'begin' || verb === 'start') tx.open = true;
    else if (verb === 'commit' || verb === 'end') {
      end(true, tx.wrote, tx.effects);
      tx.open = tx.wrote = tx.effects = false;
    } else if (verb === 'rollback') tx.open = tx.wrote = tx.effects = false;
    let writesEffects = false;
    if (verb !== 'begin' && verb !== 'start' && verb !== 'commit' && verb !== 'end' && verb !== 'rollback') {
      const wrote = WRITE.test(text);
      const effects = EFFECTS.test(text);
      writesEffects = wrote && effects;
      if (tx.open) {
        tx.wrote ||= wrote;
        tx.effects ||= effects;
      } else end(true, wrote, effects);
    }
    const t0 = performance.now();
    const waited = () => {
      const ms = performance.now() - t0;
      pgCounters.waitMs += ms;
      if (writesEffects) pgCounters.effectWaitMs += ms;
    };
    if (callback) {
      const fn = args[cb] as (...r: unknown[]) => unknown;
      args[cb] = (...r: unknown[]) => {
        waited();
        return fn(...r);
      };
    }
    const result = original.apply(this, args);
    if (!callback && result && typeof (result as Promise<unknown>).then === 'function') {
      (result as Promise<unknown>).then(waited, waited);
    }
    return result;
  };
}
