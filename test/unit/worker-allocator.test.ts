import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { allocatorAdvice, setsMmapThreshold, WORKER_MMAP_THRESHOLD_BYTES, workerProcessEnv } from '../../lib/worker-allocator.js';

describe('the allocator setting a worker process starts with', () => {
  it('adds the fixed mmap threshold to an environment that does not set one', () => {
    const env = workerProcessEnv({ PATH: '/bin', DATABASE_URL: 'postgres://x' });
    expect(env).toEqual({ PATH: '/bin', DATABASE_URL: 'postgres://x', MALLOC_MMAP_THRESHOLD_: '131072' });
  });

  it("keeps the user's own value, by the variable or by GLIBC_TUNABLES", () => {
    expect(workerProcessEnv({ MALLOC_MMAP_THRESHOLD_: '65536' })).toEqual({ MALLOC_MMAP_THRESHOLD_: '65536' });
    const tunables = { GLIBC_TUNABLES: 'glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=262144' };
    expect(workerProcessEnv(tunables)).toEqual(tunables);
    // Another tunable alone does not set the threshold.
    expect(setsMmapThreshold({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' })).toBe(false);
    expect(setsMmapThreshold({ GLIBC_TUNABLES: 'glibc.malloc.xmmap_threshold=1' })).toBe(false);
  });

  it('counts an empty variable as unset, as npm run worker does', () => {
    expect(setsMmapThreshold({ MALLOC_MMAP_THRESHOLD_: '' })).toBe(false);
    expect(workerProcessEnv({ MALLOC_MMAP_THRESHOLD_: '' })).toEqual({ MALLOC_MMAP_THRESHOLD_: '131072' });
    expect(allocatorAdvice({ MALLOC_MMAP_THRESHOLD_: '' }, '2.36')).toMatch(/is not set/);
  });

  it('npm run worker starts with the same value as the other launchers', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.worker).toBe(
      `MALLOC_MMAP_THRESHOLD_=\${MALLOC_MMAP_THRESHOLD_:-${WORKER_MMAP_THRESHOLD_BYTES}} tsx workers/main.ts`,
    );
  });

  it('advises only a glibc process that lacks the setting', () => {
    expect(allocatorAdvice({}, '2.36')).toMatch(/MALLOC_MMAP_THRESHOLD_=131072/);
    expect(allocatorAdvice({}, undefined)).toBeNull();
    expect(allocatorAdvice({ MALLOC_MMAP_THRESHOLD_: '131072' }, '2.36')).toBeNull();
  });
});
