// The worker's workflow bundle loads zod once per workflow thread (the bundler's preloadModules,
// workflows/shared-modules.ts) instead of once per workflow in the cache: evaluated per workflow
// it was most of a running job's worker memory (bench/README.md, worker memory). The bundler
// drops a require whose result is unused from a package that declares no side effects, as zod
// does: this checks that the preload really loads zod, not an empty function, and each built-in
// job type's workflow module with its definition (shared by default: workers/module-state.ts).
import { readFileSync } from 'node:fs';
import { SourceMapConsumer, type RawSourceMap } from 'source-map';
import { describe, expect, it } from 'vitest';
import { bundleWorkflows } from '../../workers/worker.js';

describe('the workflow bundle', () => {
  // Bundled once for both cases (webpack takes seconds).
  let bundle: Promise<string> | undefined;
  const code = () => (bundle ??= bundleWorkflows().then((b) => (b as { code: string }).code));
  const preloadOf = (c: string) => /exports\.preloadModules = function preloadModules\(\) \{([^}]*)\}/.exec(c)?.[1] ?? '';

  it('loads zod in the preload, before any workflow, so every workflow shares one copy', async () => {
    const c = await code();
    const preload = preloadOf(c);
    expect(preload).toContain('"./workflows/shared-modules.ts"');
    const shared = c.slice(c.indexOf('/***/ "./workflows/shared-modules.ts"'));
    expect(shared.slice(0, 3000)).toMatch(/__webpack_require__\(\/\*! zod \*\/ "\.\/node_modules\/zod\/[^"]+"\)/);
  }, 120_000);

  it('loads every built-in job definition with its preloaded workflow module (each would build its input schema per workflow)', async () => {
    const c = await code();
    for (const type of ['summarize', 'purchase', 'transcribe', 'digest']) {
      // The types name neither module: their workflow modules keep no state, so they are shared
      // by default, and what they import (the definition) is evaluated with them, once.
      const mod = c.slice(c.indexOf(`/***/ "./jobs/${type}/workflow.ts"`));
      expect(mod.slice(0, 6000)).toContain(`__webpack_require__(/*! ./definition.js */ "./jobs/${type}/definition.ts")`);
    }
  }, 120_000);

  it("loads the workflow library and the shipped job types' workflows in the preload (each module is otherwise evaluated per workflow)", async () => {
    const preload = preloadOf(await code());
    expect(preload).toContain('"./workflows/index.ts"');
    expect(preload).toContain('"./job-api/workflow.ts"');
    for (const type of ['summarize', 'purchase', 'transcribe', 'digest']) expect(preload).toContain(`"./jobs/${type}/workflow.ts"`);
  }, 120_000);

  it('maps each bundled line to its .ts file and line, without carrying the files themselves', async () => {
    const c = await code();
    const at = c.lastIndexOf('//# sourceMappingURL=data:application/json');
    expect(at).toBeGreaterThan(0);
    const map = JSON.parse(Buffer.from(c.slice(c.indexOf('base64,', at) + 7), 'base64').toString()) as RawSourceMap;
    // Nothing reads the files' text (the SDK only with showStackTraceSources); each thread would hold it.
    expect(map.sourcesContent ?? []).toEqual([]);
    // A known call in a job's workflow still points at its source line.
    const source = readFileSync(new URL('../../jobs/summarize/workflow.ts', import.meta.url), 'utf8').split('\n');
    const sourceLine = source.findIndex((l) => l.includes('return summarizeBody(args, true);')) + 1;
    const lines = c.slice(0, at).split('\n');
    const line = lines.findIndex((l) => l.includes('summarizeBody(args, true)')) + 1;
    expect(sourceLine).toBeGreaterThan(0);
    expect(line).toBeGreaterThan(0);
    const consumer = await new SourceMapConsumer(map);
    try {
      const pos = consumer.originalPositionFor({ line, column: lines[line - 1]!.indexOf('summarizeBody') });
      expect(pos.source).toMatch(/jobs\/summarize\/workflow\.ts$/);
      expect(pos.line).toBe(sourceLine);
    } finally {
      consumer.destroy();
    }
  }, 120_000);
});
