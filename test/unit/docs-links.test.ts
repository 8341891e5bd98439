import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { docFiles, extractSnippets, githubSlug, mapErrors, placeSnippets } from '../../scripts/check-doc-snippets.js';

// The README and the guides: a front page that stays one, links and anchors that resolve, and
// snippets the docs:check script can place. (Compiling them is `npm run docs:check`.)
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (p: string) => readFileSync(path.join(ROOT, p), 'utf8');
/** Guides other helpers write in parallel: linked before they land. */
const FORTHCOMING = new Set([
  'docs/security.md',
  'docs/security-limits.md',
  'docs/security-keys-and-data.md',
  'docs/operations-bulk.md',
  'docs/triggers.md',
]);

/** GitHub's anchors of a markdown file's headings (outside code fences), with -1, -2 for repeats. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^```/.test(line)) fenced = !fenced;
    const h = !fenced && /^#{1,6}\s+(.*)$/.exec(line);
    if (!h) continue;
    const slug = githubSlug(h[1]!.replace(/`/g, ''));
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

/** The relative links of a markdown file (outside code fences): target file and anchor. */
function links(markdown: string): Array<{ target: string; anchor: string | undefined; line: number }> {
  const out: Array<{ target: string; anchor: string | undefined; line: number }> = [];
  let fenced = false;
  markdown.split('\n').forEach((line, i) => {
    if (/^```/.test(line)) fenced = !fenced;
    if (fenced) return;
    for (const m of line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)) {
      const href = m[1]!;
      if (/^[a-z]+:/i.test(href)) continue;
      const [target = '', anchor] = href.split('#');
      out.push({ target, anchor, line: i + 1 });
    }
  });
  return out;
}

describe('the README and docs/', () => {
  const files = docFiles(ROOT);

  it('keeps the README a front page (about 250 lines) with the two commands and a map of the guides', () => {
    const readme = read('README.md');
    expect(readme.split('\n').length).toBeLessThanOrEqual(260);
    expect(readme).toContain('npm install && npm start');
    expect(readme).toContain('npm test');
    for (const guide of [
      'concepts',
      'job-types',
      'effects-and-upstreams',
      'operating',
      'deploying',
      'tuning',
      'configuration',
      'http-api',
      'cli',
    ])
      expect(readme).toContain(`(docs/${guide}.md)`);
    for (const f of FORTHCOMING) expect(readme).toContain(`(${f})`);
  });

  it.each(files)('%s: every relative link and anchor resolves', (file) => {
    const broken: string[] = [];
    for (const l of links(read(file))) {
      const target = l.target === '' ? file : path.posix.normalize(path.posix.join(path.posix.dirname(file), l.target));
      if (FORTHCOMING.has(target)) continue;
      if (!existsSync(path.join(ROOT, target))) {
        broken.push(`${file}:${l.line}: ${target} does not exist`);
        continue;
      }
      if (l.anchor && target.endsWith('.md') && !anchors(read(target)).has(l.anchor))
        broken.push(`${file}:${l.line}: ${target} has no heading #${l.anchor}`);
    }
    expect(broken).toEqual([]);
  });

  it('finds every TypeScript snippet and places each in a file of its own', () => {
    const snippets = files.flatMap((f) => extractSnippets(f, read(f)));
    const { placed } = placeSnippets(snippets);
    expect(snippets.filter((s) => s.doc === 'README.md' && !s.skip).length).toBeGreaterThanOrEqual(5);
    expect(new Set(placed.map((p) => p.file)).size).toBe(placed.length);
    // Skips are the exception, each with its reason.
    const skipped = snippets.filter((s) => s.skip);
    expect(skipped.length).toBeLessThanOrEqual(Math.ceil(snippets.length / 5));
    for (const s of skipped) expect(s.skip, `${s.doc}:${s.line}`).not.toBe('no reason given');
  });

  it('extracts fences, skip marks and path comments as the check script needs them', () => {
    const md = [
      '# t',
      '```ts',
      '// src/jobs.ts: the registry',
      'export default 1;',
      '```',
      '<!-- snippet:skip a fragment -->',
      '```ts',
      'ctx.effect();',
      '```',
      '```sh',
      'echo not ts',
      '```',
      '```ts',
      'const x = 1;',
      '```',
    ].join('\n');
    const s = extractSnippets('docs/t.md', md);
    expect(s.map((x) => [x.line, x.skip])).toEqual([
      [3, undefined],
      [8, 'a fragment'],
      [14, undefined],
    ]);
    expect(placeSnippets(s).placed.map((p) => p.file)).toEqual(['snippets/docs-t/src/jobs.ts', 'snippets/docs-t/src/snippet-2.ts']);
    expect(() => extractSnippets('x.md', '```ts\nnever closed')).toThrow(/never closed/);
    // A compile error is reported once, at the markdown line, also from a guide's copy of a README file.
    const placed = ['snippets/README/src/a.ts', 'snippets/docs-x/src/a.ts'].map((file) => ({ doc: 'README.md', line: 10, code: '', file }));
    const tsc =
      'snippets/README/src/a.ts(2,5): error TS2305: no such export\nsnippets/docs-x/src/a.ts(2,5): error TS2305: no such export\n';
    expect(mapErrors(tsc, placed)).toEqual(['README.md:11:5: error TS2305: no such export']);
    expect(anchors('## GET /v1/jobs/{jobId}\n## Same\n## Same\n```\n# not a heading\n```')).toEqual(
      new Set(['get-v1jobsjobid', 'same', 'same-1']),
    );
  });
});
