import { describe, expect, it } from 'vitest';
import { tenantSafeMessage } from '../../services/job-engine.js';

// What a tenant may read of a workflow task failure (GET /v1/jobs/{id} `engine.message`).
describe('tenantSafeMessage', () => {
  it('keeps the first line only: never a stack', () => {
    const err =
      "[TMPRL1100] Nondeterminism error: Activity type of scheduled event 'charge' does not match 'refund'\n    at Activator.resolve (/srv/app/node_modules/@temporalio/workflow/lib/internals.js:12:3)";
    expect(tenantSafeMessage(err)).toBe(
      "[TMPRL1100] Nondeterminism error: Activity type of scheduled event 'charge' does not match 'refund'",
    );
  });
  it('hides file paths (where the code lives on the workers)', () => {
    expect(tenantSafeMessage('Cannot find module /srv/app/dist/workflows/index.js:10:2 from bundle')).toBe(
      'Cannot find module … from bundle',
    );
    expect(tenantSafeMessage('bad import C:\\build\\app\\index.js')).toBe('bad import …');
  });
  it('cuts a long message to 160 characters', () => {
    const m = tenantSafeMessage('x'.repeat(500));
    expect(m).toHaveLength(160);
    expect(m.endsWith('…')).toBe(true);
  });
});
