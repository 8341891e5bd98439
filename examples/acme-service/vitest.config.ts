import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // The Temporal SDK's native bridge needs processes, not worker threads.
    pool: 'forks',
    testTimeout: 180_000,
    hookTimeout: 240_000,
    maxWorkers: 1,
    // Test-mode credentials of every upstream the registry declares (read at worker start).
    setupFiles: ['test/credentials.ts'],
  },
});
