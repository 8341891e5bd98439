// What the console-ops browser tests share (Schedules, Webhook deliveries, Failed
// notifications): an API of the harness's stack with a viewer and an operator key, Debian's
// Chromium through playwright-core, a signed-in page per role, and waits on the page's text.
import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { parseAdminKeys } from '../../lib/config-admin-keys.js';
import type { JobRegistry } from '../../job-api/registry.js';
import { buildApp } from '../../server/app.js';
import { WEBHOOK_SECRET, type Harness } from './harness.js';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
export const WAIT = 90_000;
export const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/console/', import.meta.url));
// Test-only keys, not real credentials.
export const VIEWER_KEY = 'console-ops-viewer-key-0001-padded-to-32';
export const OPERATOR_KEY = 'console-ops-operator-key-01-padded-to-32';
/** A second webhook source of this API (the harness's own is `sim`). */
export const BILLING_SECRET = `whsec_${Buffer.from('console-ops-billing-webhook-secret-01').toString('base64')}`;

// page callbacks run in the page: these globals exist there, not in Node.
declare const document: { querySelector(s: string): { textContent: string | null } | null };
declare const location: { hash: string };

export interface ConsoleStack {
  app: FastifyInstance;
  base: string;
  browser: Browser;
  pageErrors: string[];
  /** A fresh browser context signed in with `key` (the console's own sign-in form). */
  signedIn(key: string): Promise<{ context: BrowserContext; page: Page }>;
  /** An admin API call as the operator (`otto`) or the viewer (`vera`). */
  call(method: 'GET' | 'POST', path: string, body?: unknown, key?: string): Promise<{ status: number; body: any }>;
  close(): Promise<void>;
}

export async function startConsoleStack(h: Harness, jobTypes: JobRegistry): Promise<ConsoleStack> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`);
  mkdirSync(ARTIFACTS, { recursive: true });
  const app = buildApp({
    jobTypes,
    pool: h.pool,
    temporal: h.temporal,
    jobs: h.jobs,
    log: h.log,
    adminKeys: parseAdminKeys(`vera:viewer=${VIEWER_KEY},otto:operator=${OPERATOR_KEY}`, undefined),
    version: 'test',
    webhookSecrets: { sim: [WEBHOOK_SECRET], billing: [BILLING_SECRET] },
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
  const pageErrors: string[] = [];
  return {
    app,
    base,
    browser,
    pageErrors,
    async signedIn(key) {
      const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
      const page = await context.newPage();
      page.on('console', (m) => {
        if (m.type() === 'error' && !/status of 4\d\d/.test(m.text())) pageErrors.push(m.text());
      });
      page.on('pageerror', (e) => pageErrors.push(e.message));
      await page.goto(`${base}/console`);
      await page.fill('#admin-key', key);
      await page.click('#sign-in-form button[type=submit]');
      await page.waitForSelector('#app:not([hidden])', { timeout: WAIT });
      return { context, page };
    },
    async call(method, path, body, key = OPERATOR_KEY) {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const raw = await res.text();
      return { status: res.status, body: raw ? JSON.parse(raw) : undefined };
    },
    async close() {
      await browser.close();
      await app.close();
    },
  };
}

export async function textMatches(page: Page, selector: string, re: RegExp, timeout = WAIT): Promise<string> {
  await page.waitForFunction(
    ({ s, src, flags }) => new RegExp(src, flags).test(document.querySelector(s)?.textContent ?? ''),
    { s: selector, src: re.source, flags: re.flags },
    { timeout, polling: 250 },
  );
  return (await page.textContent(selector)) ?? '';
}

export const openPage = (page: Page, h: string) =>
  page.evaluate((x) => {
    location.hash = x;
  }, h);

/** The texts of the buttons a person can see in the app. */
export const visibleButtons = (page: Page) =>
  page.$$eval('#app button', (els) =>
    els.filter((e) => (e as unknown as { checkVisibility(): boolean }).checkVisibility()).map((e) => e.textContent?.trim() ?? ''),
  );

/** A problem that names `field` (RFC 9457, `errors[].path`). */
export function expectProblemNaming(res: { status: number; body: any }, status: number, field: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body.errors?.map((e: { path: string }) => e.path)).toContain(field);
}
