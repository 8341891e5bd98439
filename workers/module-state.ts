/**
 * Whether a job type's workflow module may be shared by every workflow of a worker thread
 * (`jobType`'s `sharedWorkflow`): evaluated once per thread, as the workflow library is, instead
 * of once per cached workflow. The SDK deep-freezes what such a module exports, so mutating an
 * exported object throws; but a binding in module scope that a function reassigns (`let`,
 * `var`), a container that is not exported (never frozen) or one that freezing does not stop
 * (a Map, a Set) would be one value for all workflows: one workflow's state leaking into
 * another's, silently. These finders refuse those three forms in the module and in every local
 * module it imports, as the bundler walks them.
 *
 * Parsed with `@swc/core`, which comes with `@temporalio/worker` (its bundler compiles workflow
 * code with it), so the check costs the package no dependency of its own.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

interface Node {
  type: string;
  [k: string]: any;
}
interface Swc {
  parseSync(src: string, o: { syntax: 'typescript' | 'ecmascript'; tsx?: boolean }): { body: Node[] };
}

let swc: Swc | undefined;
function parse(fileName: string, text: string): Node[] {
  swc ??= createRequire(createRequire(import.meta.url).resolve('@temporalio/worker'))('@swc/core') as Swc;
  return swc.parseSync(text, { syntax: /\.[cm]?tsx?$/.test(fileName) ? 'typescript' : 'ecmascript' }).body;
}

const WRAPPERS = new Set(['TsAsExpression', 'TsSatisfiesExpression', 'ParenthesisExpression', 'TsConstAssertion', 'TsTypeAssertion']);
const UNFROZEN = /^(Map|Set|WeakMap|WeakSet)$/;

/** What in a module's top level could hold per-workflow state once the module is shared. */
export function moduleStateFindings(fileName: string, text: string): string[] {
  const findings: string[] = [];
  const file = path.basename(fileName);
  for (const stmt of parse(fileName, text)) {
    const exported = stmt.type === 'ExportDeclaration';
    const decl = exported ? stmt.declaration : stmt;
    if (decl?.type !== 'VariableDeclaration') continue;
    for (const d of decl.declarations as Node[]) {
      const name = d.id?.value ?? '(pattern)';
      if (decl.kind !== 'const') {
        findings.push(`${file} ${name}: a reassignable binding in module scope`);
        continue;
      }
      let init: Node | undefined = d.init;
      while (init && WRAPPERS.has(init.type)) init = init.expression;
      if (init?.type === 'NewExpression' && init.callee?.type === 'Identifier' && UNFROZEN.test(init.callee.value))
        findings.push(`${file} ${name}: a ${init.callee.value} in module scope (freezing does not stop its changes)`);
      else if (init && !exported && (init.type === 'ArrayExpression' || init.type === 'ObjectExpression'))
        findings.push(`${file} ${name}: a container in module scope that is not exported (never frozen)`);
    }
  }
  return findings;
}

/** `./x.js` from a TypeScript source is `./x.ts` when that file exists (tsx, this repository), else the `.js` itself. */
function resolveLocal(from: string, spec: string): string {
  const target = path.resolve(path.dirname(from), spec);
  const ts = target.replace(/\.js$/, '.ts');
  return ts !== target && existsSync(ts) ? ts : target;
}

/** The entry modules and every local module they import (type-only imports are not bundled), by file. */
export function localModules(entries: readonly string[]): Map<string, string> {
  const seen = new Map<string, string>();
  const queue = entries.map((p) => path.resolve(p));
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    const text = readFileSync(file, 'utf8');
    seen.set(file, text);
    for (const stmt of parse(file, text)) {
      const local =
        (stmt.type === 'ImportDeclaration' || stmt.type === 'ExportAllDeclaration' || stmt.type === 'ExportNamedDeclaration') &&
        !stmt.typeOnly &&
        typeof stmt.source?.value === 'string' &&
        stmt.source.value.startsWith('.');
      if (local) queue.push(resolveLocal(file, stmt.source.value));
    }
  }
  return seen;
}

/** Every finding in the module and the local modules it imports: none means it may be shared. */
export function sharedStateFindings(workflowsPath: string): string[] {
  return [...localModules([workflowsPath])].flatMap(([file, text]) => moduleStateFindings(file, text));
}
