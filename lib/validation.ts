import type { z } from 'zod';
import type { FieldIssue } from './errors.js';

/** zod's issues as the problem's `errors` fields, each path prefixed (`input.text`). */
export function zodFieldIssues(error: z.ZodError, prefix?: string): FieldIssue[] {
  return error.issues.map((i) => ({
    path: [...(prefix ? [prefix] : []), ...i.path.map(String)].join('.') || '(body)',
    message: i.message,
  }));
}
