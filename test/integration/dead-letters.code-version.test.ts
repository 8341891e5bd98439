import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { detectCodeVersion, REPO_ROOT } from '../../lib/code-version.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { loadConfig, PACKAGE_VERSION } from '../../lib/config.js';

// Real files and a real git repository in a temporary folder: the code version must change
// whenever the code does, which the package version alone never did.
const dir = mkdtempSync(join(tmpdir(), 'dj-code-version-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const git = (...args: string[]) => execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8' }).trim();

describe('the code version recorded in dead letters', () => {
  it('is not the bare package version by default: it names the commit and the source content', () => {
    const v = loadConfig({}, { jobTypes: defaultJobRegistry.names }).codeVersion;
    expect(v).not.toBe(PACKAGE_VERSION);
    const head = execFileSync('git', ['-C', REPO_ROOT, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
    expect(v).toBe(`${PACKAGE_VERSION}+g${head.slice(0, 12)}.src${v.slice(-12)}`);
    expect(loadConfig({ CODE_VERSION: 'release-42' }, { jobTypes: defaultJobRegistry.names }).codeVersion).toBe('release-42');
  });

  it('changes with every edit of the code, committed or not, and not with tests', () => {
    mkdirSync(join(dir, 'workflows'));
    mkdirSync(join(dir, 'test'));
    writeFileSync(join(dir, 'workflows', 'a.ts'), 'export const a = 1;\n');
    const noGit = detectCodeVersion('1.0.0', dir);
    expect(noGit).toMatch(/^1\.0\.0\+src[0-9a-f]{12}$/);
    writeFileSync(join(dir, 'test', 'a.test.ts'), 'test only\n');
    expect(detectCodeVersion('1.0.0', dir)).toBe(noGit);

    git('init', '-q');
    git('-c', 'user.email=t@example.com', '-c', 'user.name=t', 'commit', '-q', '--allow-empty', '-m', 'first');
    const committed = detectCodeVersion('1.0.0', dir);
    expect(committed).toBe(`1.0.0+g${git('rev-parse', 'HEAD').slice(0, 12)}.${noGit.split('+')[1]}`);
    writeFileSync(join(dir, 'workflows', 'a.ts'), 'export const a = 2;\n');
    const edited = detectCodeVersion('1.0.0', dir);
    expect(edited).not.toBe(committed);
    expect(edited.split('.src')[0]).toBe(committed.split('.src')[0]);
  });
});
