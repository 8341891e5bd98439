import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { generatedDocs, readOpenApi, renderHttpApi } from '../../scripts/gen-docs.js';

// docs/http-api.md and docs/cli.md are generated from the code (the OpenAPI document the API
// serves, each command's --help): regenerated here and compared, so a stale file fails.
describe('the generated docs', () => {
  it('docs/http-api.md and docs/cli.md are what npm run docs:gen writes now', async () => {
    for (const { file, text } of await generatedDocs()) {
      const name = path.relative(process.cwd(), file);
      expect(readFileSync(file, 'utf8'), `${name} is stale: run npm run docs:gen`).toBe(text);
    }
  }, 300_000);

  it('documents every route and every job type the API serves', async () => {
    const doc = await readOpenApi();
    const md = renderHttpApi(doc);
    for (const [p, item] of Object.entries(doc.paths))
      for (const m of Object.keys(item)) expect(md).toContain(`## ${m.toUpperCase()} ${p}`);
    expect(md).toContain('### summarizeInput');
    expect(md).toMatch(/\| `text` \| string \(1-100000 chars\) \| yes \|/);
  });
});
