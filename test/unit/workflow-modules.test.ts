// The workflow library is preloaded (workers/worker.ts `WORKFLOW_LIBRARY_PATHS`), and so are the
// workflow modules of the shipped job types (`jobType`'s `sharedWorkflow`): evaluated once
// per workflow thread and shared by every workflow in it. The SDK deep-freezes what such a module
// exports, so mutating an exported object throws; but a binding in module scope that a function
// reassigns (`let`, `var`), or a container that is not exported (never frozen) or cannot be
// frozen (a Map, a Set), would be one value for all workflows: one workflow's state leaking into
// another's, silently. This walks every module the preloaded ones import, as the bundler does,
// and refuses those three forms in module scope.
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultJobRegistry } from '../../jobs/index.js';
import { localModules, moduleStateFindings, sharedStateFindings } from '../../workers/module-state.js';
import { sharedWorkflowModules, WORKFLOW_LIBRARY_PATHS } from '../../workers/worker.js';

/** The preloaded modules (the library, the shipped types' workflows) and every local module they import. */
function libraryModules(): Map<string, string> {
  return localModules([...WORKFLOW_LIBRARY_PATHS, ...sharedWorkflowModules(defaultJobRegistry).shared]);
}

describe('the preloaded workflow library', () => {
  it('keeps no per-workflow state in module scope, in any module it imports', () => {
    const modules = libraryModules();
    const names = [...modules.keys()].map((f) => path.relative(process.cwd(), f));
    // The walk reaches what the jobs' workflows run on, and the module that once kept state.
    expect(names).toEqual(
      expect.arrayContaining([
        'workflows/lifecycle.ts',
        'workflows/step-activities.ts',
        'workflows/admission.ts',
        'workflows/replay.ts',
        'contract/messages.ts',
        'jobs/summarize/workflow.ts',
        'jobs/transcribe/workflow.ts',
      ]),
    );
    const findings = [...modules].flatMap(([file, text]) => moduleStateFindings(file, text));
    expect(findings).toEqual([]);
  });

  it('finds each form of shared state it refuses', () => {
    const text = [
      'let folded: number | undefined;',
      'export var count = 0;',
      'const waiters = new Map<string, number>();',
      'const pending = [] as string[];',
      'const byId = {};',
      'export const OPTIONS = { a: 1 };',
      'const LIMIT = 3;',
      "export const proxy = proxyActivities({ startToCloseTimeout: '1m' });",
    ].join('\n');
    expect(moduleStateFindings('/x/m.ts', text)).toEqual([
      'm.ts folded: a reassignable binding in module scope',
      'm.ts count: a reassignable binding in module scope',
      'm.ts waiters: a Map in module scope (freezing does not stop its changes)',
      'm.ts pending: a container in module scope that is not exported (never frozen)',
      'm.ts byId: a container in module scope that is not exported (never frozen)',
    ]);
  });

  it("shares a team's workflow module by default only when it and its imports keep no state", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dj-module-state-'));
    writeFileSync(
      path.join(dir, 'clean.ts'),
      "import { helper } from './helper.js';\nexport async function cleanJob() { return helper(); }\n",
    );
    writeFileSync(path.join(dir, 'helper.ts'), 'export const helper = () => 1;\n');
    writeFileSync(
      path.join(dir, 'stateful.ts'),
      "import { seen } from './cache.js';\nexport async function statefulJob() { return seen.size; }\n",
    );
    writeFileSync(path.join(dir, 'cache.ts'), 'export const seen = new Set<string>();\n');
    writeFileSync(path.join(dir, 'types.ts'), 'let never = 0;\nexport type T = number;\n');
    writeFileSync(
      path.join(dir, 'typed.ts'),
      "import type { T } from './types.js';\nexport async function typedJob(): Promise<T> { return 1; }\n",
    );
    const mod = (name: string, file: string, sharedWorkflow?: boolean) =>
      ({ definition: { name }, workflowsPath: path.join(dir, file), ...(sharedWorkflow !== undefined ? { sharedWorkflow } : {}) }) as never;
    const r = sharedWorkflowModules({
      modules: [
        mod('clean', 'clean.ts'),
        mod('stateful', 'stateful.ts'),
        mod('typed', 'typed.ts'),
        mod('optOut', 'clean.ts', false),
        mod('forced', 'stateful.ts', true),
      ],
    });
    // A type-only import is not bundled, so its module's state does not count.
    expect(r.shared).toEqual([path.join(dir, 'clean.ts'), path.join(dir, 'typed.ts'), path.join(dir, 'stateful.ts')]);
    expect(r.unshared).toEqual([
      { jobType: 'stateful', findings: ['cache.ts seen: a Set in module scope (freezing does not stop its changes)'] },
    ]);
    expect(sharedStateFindings(path.join(dir, 'clean.ts'))).toEqual([]);
  });
});
