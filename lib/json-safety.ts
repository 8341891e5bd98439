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
