/**
 * The console in a real browser (Debian's Chromium through playwright-core), for the console
 * pages' tests: launch, sign in with a key, open a page, wait for a text.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
/** Generous: the machine is shared and slow. */
export const WAIT = 90_000;
export const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/console/', import.meta.url));

// page.evaluate / waitForFunction callbacks run in the page: these globals exist there, not in Node.
declare const document: { querySelector(s: string): { textContent: string | null } | null };
declare const location: { hash: string };

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`);
  mkdirSync(ARTIFACTS, { recursive: true });
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
}

export interface ConsoleSession {
  context: BrowserContext;
  page: Page;
  /** Script errors and console errors other than the 4xx answers the pages show (problems they render). */
  errors: string[];
}

/** A fresh browser context at 1400 px, signed in with `key` at `<base>/console`. */
export async function signIn(browser: Browser, base: string, key: string): Promise<ConsoleSession> {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of 4\d\d/.test(m.text())) errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${base}/console`);
  await page.fill('#admin-key', key);
  await page.click('#sign-in-form button[type=submit]');
  await page.waitForSelector('#app:not([hidden])', { timeout: WAIT });
  return { context, page, errors };
}

export const openHash = (page: Page, hash: string): Promise<void> =>
  page.evaluate((x) => {
    location.hash = x;
  }, hash);

/** Waits until the element's text matches, and returns it. */
export async function textMatches(page: Page, selector: string, re: RegExp, timeout = WAIT): Promise<string> {
  await page.waitForFunction(
    ({ s, src, flags }) => new RegExp(src, flags).test(document.querySelector(s)?.textContent ?? ''),
    { s: selector, src: re.source, flags: re.flags },
    { timeout, polling: 250 },
  );
  return (await page.textContent(selector)) ?? '';
}

/** The texts of the buttons a person can see in the app (hidden ones, e.g. by role, excluded). */
export const visibleButtons = (page: Page): Promise<string[]> =>
  page.$$eval('#app button', (els) =>
    els.filter((e) => (e as unknown as { checkVisibility(): boolean }).checkVisibility()).map((e) => e.textContent?.trim() ?? e.tagName),
  );
