import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // The Temporal SDK's native bridge crashes under worker threads (sdk-typescript #876).
    pool: 'forks',
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // The server secret every file's process derives IDs with (and its spawned processes inherit).
    setupFiles: ['test/support/server-secret.ts'],
    // Real Temporal + Postgres on a slow shared 2-core machine: generous, condition-based waits.
    testTimeout: 120_000,
    hookTimeout: 180_000,
    maxWorkers: 2,
  },
});
