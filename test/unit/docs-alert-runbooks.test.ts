import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

// Every alert an operator can be paged by has a runbook in docs/operating.md: a section
// `### <AlertName>` under "Alert runbooks". A new alert without one fails here.
const read = (p: string) => readFileSync(fileURLToPath(new URL(`../../${p}`, import.meta.url)), 'utf8');

/** The alert names of a Prometheus rules file. */
function alertNames(rulesYaml: string): string[] {
  const doc = parse(rulesYaml) as { groups: Array<{ rules: Array<{ alert?: string }> }> };
  return doc.groups.flatMap((g) => g.rules.flatMap((r) => (r.alert ? [r.alert] : [])));
}

/** The `### Name` headings of the "## Alert runbooks" section, each with its text. */
function runbookSections(markdown: string): Map<string, string> {
  const start = markdown.indexOf('\n## Alert runbooks\n');
  const sections = new Map<string, string>();
  if (start < 0) return sections;
  const rest = markdown.slice(start + 1);
  const end = rest.slice(3).search(/\n## /);
  const body = end < 0 ? rest : rest.slice(0, end + 3);
  for (const part of body.split(/\n### /).slice(1)) {
    const [name = '', ...text] = part.split('\n');
    sections.set(name.trim(), text.join('\n'));
  }
  return sections;
}

describe('docs/operating.md has a runbook per alert in ops/alerts.yml', () => {
  const alerts = alertNames(read('ops/alerts.yml'));
  const runbooks = runbookSections(read('docs/operating.md'));

  it('reads the alerts and the runbook sections', () => {
    expect(alerts.length).toBeGreaterThanOrEqual(10);
    expect(runbooks.size).toBeGreaterThan(0);
  });

  it.each(alerts)('%s has a runbook that says what it means and what to do', (alert) => {
    const text = runbooks.get(alert);
    expect(text, `docs/operating.md has no "### ${alert}" under "## Alert runbooks"`).toBeDefined();
    expect(text).toContain('**Means**');
    expect(text).toContain('**Do**');
  });

  it('has no runbook for an alert that no longer exists', () => {
    expect([...runbooks.keys()].filter((n) => !alerts.includes(n))).toEqual([]);
  });

  it('finds a missing runbook (the check itself can fail)', () => {
    const md = '# x\n\n## Alert runbooks\n\n### A\n\n**Means**: a. **Do**: b.\n\n## After\n\n### B\n';
    expect([...runbookSections(md).keys()]).toEqual(['A']);
    expect(
      alertNames('groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n      - alert: B\n        expr: up\n'),
    ).toEqual(['A', 'B']);
  });
});
