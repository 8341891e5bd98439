import type { z } from 'zod';
import type { FieldIssue } from './errors.js';

/**
 * zod's issues as the problem's `errors` fields, each path prefixed (`input.text`). Each unknown
 * field of a strict object is its own entry, named, with `unknownKeyMessage` (default "unknown field").
 */
export function zodFieldIssues(error: z.ZodError, prefix?: string, unknownKeyMessage?: string): FieldIssue[] {
  const at = (path: PropertyKey[]) => [...(prefix ? [prefix] : []), ...path.map(String)].join('.') || '(body)';
  return error.issues.flatMap((i) => {
    if (i.code === 'unrecognized_keys')
      return i.keys.map((k) => ({ path: at([...i.path, k]), message: unknownKeyMessage ?? 'unknown field' }));
    return [{ path: at(i.path), message: i.message }];
  });
}
