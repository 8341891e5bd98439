// The workflow library is preloaded (workers/worker.ts `WORKFLOW_LIBRARY_PATHS`), and so are the
// workflow modules of the shipped job types (`jobType`'s `sharedWorkflow`): evaluated once
// per workflow thread and shared by every workflow in it. The SDK deep-freezes what such a module
// exports, so mutating an exported object throws; but a binding in module scope that a function
// reassigns (`let`, `var`), or a container that is not exported (never frozen) or cannot be
// frozen (a Map, a Set), would be one value for all workflows: one workflow's state leaking into
// another's, silently. This walks every module the preloaded ones import, as the bundler does,
// and refuses those three forms in module scope.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { defaultJobRegistry } from '../../jobs/index.js';
import { WORKFLOW_LIBRARY_PATHS } from '../../workers/worker.js';

/** What in a module's top level could hold per-workflow state once the module is shared. */
export function moduleStateFindings(fileName: string, text: string): string[] {
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const findings: string[] = [];
  const where = (n: ts.Node) => `${path.basename(fileName)}:${sf.getLineAndCharacterOfPosition(n.getStart()).line + 1}`;
  for (const stmt of sf.statements) {
    if (!ts.isVariableStatement(stmt)) continue;
    const exported = stmt.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword) ?? false;
    const isConst = (stmt.declarationList.flags & ts.NodeFlags.Const) !== 0;
    for (const d of stmt.declarationList.declarations) {
      const name = d.name.getText(sf);
      if (!isConst) {
        findings.push(`${where(d)} ${name}: a reassignable binding in module scope`);
        continue;
      }
      let init = d.initializer;
      while (init && (ts.isAsExpression(init) || ts.isSatisfiesExpression(init) || ts.isParenthesizedExpression(init)))
        init = init.expression;
      if (init && ts.isNewExpression(init) && /^(Map|Set|WeakMap|WeakSet)$/.test(init.expression.getText(sf)))
        findings.push(`${where(d)} ${name}: a ${init.expression.getText(sf)} in module scope (freezing does not stop its changes)`);
      else if (init && !exported && (ts.isArrayLiteralExpression(init) || ts.isObjectLiteralExpression(init)))
        findings.push(`${where(d)} ${name}: a container in module scope that is not exported (never frozen)`);
    }
  }
  return findings;
}

/** The preloaded modules (the library, the shipped types' workflows) and every local module they import (type-only imports are not bundled). */
function libraryModules(): Map<string, string> {
  const seen = new Map<string, string>();
  const shared = defaultJobRegistry.modules.flatMap((m) => (m.sharedWorkflow ? [m.workflowsPath] : []));
  const queue = [...WORKFLOW_LIBRARY_PATHS, ...shared].map((p) => path.resolve(p));
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    const text = readFileSync(file, 'utf8');
    seen.set(file, text);
    const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
    for (const stmt of sf.statements) {
      const spec =
        (ts.isImportDeclaration(stmt) && !stmt.importClause?.isTypeOnly) || (ts.isExportDeclaration(stmt) && !stmt.isTypeOnly)
          ? stmt.moduleSpecifier
          : undefined;
      if (!spec || !ts.isStringLiteral(spec) || !spec.text.startsWith('.')) continue;
      queue.push(path.resolve(path.dirname(file), spec.text.replace(/\.js$/, '.ts')));
    }
  }
  return seen;
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
      'm.ts:1 folded: a reassignable binding in module scope',
      'm.ts:2 count: a reassignable binding in module scope',
      'm.ts:3 waiters: a Map in module scope (freezing does not stop its changes)',
      'm.ts:4 pending: a container in module scope that is not exported (never frozen)',
      'm.ts:5 byId: a container in module scope that is not exported (never frozen)',
    ]);
  });
});
