/**
 * `npm run docs:check`: every ```ts snippet of README.md and docs/*.md type-checks against the
 * BUILT package, as a reader's project would see it, so a renamed export breaks CI, not a reader.
 *
 * Packs this package (`prepack` builds it), installs the tarball into a scratch project outside
 * the repository (the dependencies of examples/acme-service/, the model of a team's service),
 * writes each snippet there as a file and runs `tsc --noEmit`. Errors are reported at the
 * snippet's line in its markdown file.
 *
 * - A snippet whose first line is a path comment (`// src/jobs/receipt/definition.ts`) is written
 *   to that path in its document's folder, so one document's snippets may import each other;
 *   the others go to `src/snippet-<n>.ts`. Each guide's folder also gets the README's
 *   path-named files it does not write itself: the guides build on the README's project.
 * - A fragment that cannot compile on its own is marked with `<!-- snippet:skip reason -->` on
 *   the line before its fence (sparingly: a skipped snippet can rot).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes. */
export const githubSlug = (heading: string): string =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

export interface Snippet {
  /** The markdown file, relative to the repository. */
  doc: string;
  /** 1-based line of the snippet's first code line in the markdown file. */
  line: number;
  code: string;
  /** The reason given in `<!-- snippet:skip reason -->`, when skipped. */
  skip?: string;
}

const FENCE_OPEN = /^```(ts|typescript)\s*$/;
const SKIP = /^<!--\s*snippet:skip\b\s*(.*?)\s*-->\s*$/;
/** `// src/jobs.ts`, `// test/receipt.test.ts: what it is`: where the snippet lives in its project. */
const PATH_COMMENT = /^\/\/\s+((?:src|test)\/[\w./-]+\.ts)\b/;

/** The TypeScript snippets of one markdown file, in order. */
export function extractSnippets(doc: string, markdown: string): Snippet[] {
  const lines = markdown.split('\n');
  const out: Snippet[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!FENCE_OPEN.test(lines[i]!)) continue;
    let prev = i - 1;
    while (prev >= 0 && lines[prev]!.trim() === '') prev--;
    const skip = prev >= 0 ? SKIP.exec(lines[prev]!.trim()) : null;
    const start = i + 1;
    let end = start;
    while (end < lines.length && !/^```\s*$/.test(lines[end]!)) end++;
    if (end >= lines.length) throw new Error(`${doc}:${i + 1}: a \`\`\`ts fence is never closed`);
    out.push({ doc, line: start + 1, code: lines.slice(start, end).join('\n'), ...(skip ? { skip: skip[1] || 'no reason given' } : {}) });
    i = end;
  }
  return out;
}

export interface PlacedSnippet extends Snippet {
  /** Path of the file in the scratch project. */
  file: string;
}

/**
 * Where each checked snippet of a document goes in the scratch project, and the files it gets
 * beside them: the guides build on the README's project, so every guide's folder also holds the
 * README's path-named files (its job type, its registry) unless the guide writes its own.
 */
export function placeSnippets(snippets: readonly Snippet[]): {
  placed: PlacedSnippet[];
  extra: Record<string, string>;
  /** Each README file copied into a guide's folder, as the README snippet it came from (for error lines). */
  copies: PlacedSnippet[];
} {
  const placed: PlacedSnippet[] = [];
  const byDoc = new Map<string, Snippet[]>();
  for (const s of snippets.filter((x) => !x.skip)) byDoc.set(s.doc, [...(byDoc.get(s.doc) ?? []), s]);
  const base = new Map<string, { text: string; from?: Snippet }>([
    ['src/jobs.ts', { text: "import { createJobRegistry } from 'durable-jobs/jobs';\nexport default createJobRegistry([]);\n" }],
  ]);
  for (const s of byDoc.get('README.md') ?? []) {
    const named = PATH_COMMENT.exec(s.code.split('\n')[0] ?? '')?.[1];
    if (named) base.set(named, { text: `${s.code}\n\nexport {};\n`, from: s });
  }
  const extra: Record<string, string> = {};
  const copies: PlacedSnippet[] = [];
  for (const [doc, list] of byDoc) {
    const dir = `snippets/${doc.replace(/\.md$/, '').replace(/[^A-Za-z0-9]+/g, '-')}`;
    const taken = new Set<string>();
    list.forEach((s, n) => {
      const named = PATH_COMMENT.exec(s.code.split('\n')[0] ?? '')?.[1];
      const file = `${dir}/${named ?? `src/snippet-${n + 1}.ts`}`;
      if (taken.has(file)) throw new Error(`${s.doc}:${s.line}: two snippets are both ${named}`);
      taken.add(file);
      placed.push({ ...s, file });
    });
    for (const [rel, { text, from }] of base) {
      if (taken.has(`${dir}/${rel}`)) continue;
      extra[`${dir}/${rel}`] = text;
      if (from) copies.push({ ...from, file: `${dir}/${rel}` });
    }
  }
  return { placed, extra, copies };
}

/** `snippets/docs-x/src/snippet-2.ts(4,7): error TS…` → `docs/x.md:<line>:<col>: error TS…`, each once. */
export function mapErrors(output: string, placed: readonly PlacedSnippet[]): string[] {
  const byFile = new Map(placed.map((p) => [p.file, p]));
  const lines = output
    .split('\n')
    .filter((l) => /error TS\d+/.test(l))
    .map((l) => {
      const m = /^(.+?)\((\d+),(\d+)\): (.*)$/.exec(l);
      const p = m ? byFile.get(m[1]!) : undefined;
      return p && m ? `${p.doc}:${p.line + Number(m[2]) - 1}:${m[3]}: ${m[4]}` : l;
    });
  return [...new Set(lines)];
}

export function docFiles(root = ROOT): string[] {
  const docs = readdirSync(path.join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', ...docs];
}

// npm's own variables (inherited from `npm run`) would point the nested npm at this repository.
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
const say = (m: string) => console.log(`[docs:check] ${m}`);

function run(cmd: string, args: string[], cwd: string, capture = false): { status: number | null; out: string } {
  say(`${cmd} ${args.join(' ')}  (in ${cwd})`);
  const r = spawnSync(cmd, args, { cwd, env, stdio: capture ? ['ignore', 'pipe', 'pipe'] : 'inherit', encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

function must(r: { status: number | null; out: string }, what: string): void {
  if (r.status !== 0) throw new Error(`${what} failed (${r.status})`);
}

async function main(): Promise<void> {
  const snippets = docFiles().flatMap((d) => extractSnippets(d, readFileSync(path.join(ROOT, d), 'utf8')));
  const { placed, extra, copies } = placeSnippets(snippets);
  for (const s of snippets.filter((x) => x.skip)) say(`skipped ${s.doc}:${s.line}: ${s.skip}`);

  const work = mkdtempSync(path.join(os.tmpdir(), 'durable-jobs-doc-snippets-'));
  chmodSync(work, 0o755);
  try {
    must(run('npm', ['pack', '--pack-destination', work, '--silent'], ROOT), 'npm pack');
    const tarball = path.join(
      work,
      readdirSync(work).find((f) => f.endsWith('.tgz'))!,
    );
    const app = path.join(work, 'reader');
    mkdirSync(app);
    // The reader's project: the dependencies a team's service has (examples/acme-service/),
    // the clients its upstreams use among them (stripe, nodemailer and its types: the
    // effects-and-upstreams snippets import them).
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'examples', 'acme-service', 'package.json'), 'utf8'));
    writeFileSync(
      path.join(app, 'package.json'),
      JSON.stringify(
        { name: 'doc-snippets', private: true, type: 'module', dependencies: pkg.dependencies, devDependencies: pkg.devDependencies },
        null,
        2,
      ),
    );
    writeFileSync(
      path.join(app, 'tsconfig.json'),
      JSON.stringify(
        {
          compilerOptions: {
            target: 'ES2022',
            lib: ['ES2022'],
            module: 'NodeNext',
            moduleResolution: 'NodeNext',
            strict: true,
            noUncheckedIndexedAccess: true,
            noEmit: true,
            // @temporalio/common's own .d.ts need a declaration of `ms` it does not ship.
            skipLibCheck: true,
            types: ['node'],
          },
          include: ['snippets'],
        },
        null,
        2,
      ),
    );
    must(run('npm', ['install', tarball, '--no-audit', '--no-fund', '--prefer-offline'], app), 'npm install');
    const files: Record<string, string> = { ...extra };
    // `export {}` makes a snippet without imports a module (top-level await, its own scope).
    for (const p of placed) files[p.file] = `${p.code}\n\nexport {};\n`;
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(app, file)), { recursive: true });
      writeFileSync(path.join(app, file), text);
    }
    say(`${placed.length} snippets from ${new Set(placed.map((p) => p.doc)).size} documents`);
    const tsc = run('npx', ['--no-install', 'tsc', '--noEmit', '-p', 'tsconfig.json', '--pretty', 'false'], app, true);
    if (tsc.status !== 0) {
      for (const e of mapErrors(tsc.out, [...placed, ...copies])) console.error(e);
      say('snippets do not type-check against the built package (fix the doc, or the export it names)');
      process.exitCode = 1;
      return;
    }
    say(`all ${placed.length} snippets type-check against the built package`);
  } finally {
    if (!process.env.KEEP_SNIPPETS) rmSync(work, { recursive: true, force: true });
    else say(`kept ${work}`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main().catch((err: unknown) => {
    say((err as Error).message);
    process.exitCode = 1;
  });
}
