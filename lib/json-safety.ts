import type { FieldIssue } from './errors.js';

/** A NUL character or a lone UTF-16 surrogate: Postgres cannot store either in text or jsonb. */
// eslint-disable-next-line no-control-regex -- matching NUL is the point: Postgres cannot store it
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function hasUnstorableText(s: string): boolean {
  return UNSTORABLE.test(s);
}

/**
 * The first string (or object key) in `value` that Postgres would refuse, as a field issue.
 * Caught at validation, such input gets a precise 400 instead of failing at the insert.
 */
export function findUnstorableText(value: unknown, path: string): FieldIssue | undefined {
  const message = 'must not contain NUL characters or unpaired UTF-16 surrogates';
  if (typeof value === 'string') return hasUnstorableText(value) ? { path, message } : undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const issue = findUnstorableText(value[i], `${path}.${i}`);
      if (issue) return issue;
    }
    return undefined;
  }
  if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (hasUnstorableText(k)) return { path: `${path}.${k.replace(UNSTORABLE, '?')}`, message: `key ${message}` };
      const issue = findUnstorableText(v, `${path}.${k}`);
      if (issue) return issue;
    }
  }
  return undefined;
}

/**
 * The first unstorable string in a request part (path parameters, query string, JSON body),
 * named by its field path from the top (`reason`, `ids.0`, `input.text`); a bare string body
 * is named `body`.
 */
export function findUnstorableField(part: unknown): FieldIssue | undefined {
  if (typeof part === 'string') return findUnstorableText(part, 'body');
  if (part === null || typeof part !== 'object') return undefined;
  if (Array.isArray(part)) return findUnstorableText(part, 'body');
  for (const [k, v] of Object.entries(part)) {
    if (hasUnstorableText(k))
      return {
        path: k.replace(new RegExp(UNSTORABLE, 'g'), '?'),
        message: 'key must not contain NUL characters or unpaired UTF-16 surrogates',
      };
    const issue = findUnstorableText(v, k);
    if (issue) return issue;
  }
  return undefined;
}

/**
 * The deepest nesting a JSON body may have (objects and arrays). Real events and job inputs
 * nest a few levels; thousands of levels only exhaust the stack of every recursive walk
 * after the parse (validation, `findUnstorableText`, `JSON.stringify` for jsonb), which
 * answered 500 and made a provider redeliver the same event forever.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * True when the JSON text nests objects or arrays deeper than `max`. A loop over the
 * characters, no recursion, so it is safe on any input, and it runs before `JSON.parse`
 * builds anything. Brackets inside strings do not count. Invalid JSON is left to the parser.
 */
export function jsonNestedDeeperThan(text: string, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > max) return true;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) depth--;
  }
  return false;
}
