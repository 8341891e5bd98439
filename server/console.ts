/**
 * The operator console (`/console`): static files read once at start, served by this process
 * with a strict Content-Security-Policy. The page holds no data and no key: the operator pastes
 * an admin key, the page trades it once for a session (an HttpOnly, SameSite=Strict cookie,
 * server/sessions.ts) and forgets it; changes through the session also need the console's own
 * header, which another site cannot send.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { FastifyInstance, FastifyReply } from 'fastify';

const require = createRequire(import.meta.url);
const own = (name: string) => new URL(`../console/${name}`, import.meta.url);

/** Everything the page may load comes from here; no inline script or style, no framing, no form posts. */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

interface Asset {
  body: Buffer;
  type: string;
}

function assets(): Map<string, Asset> {
  const files: Array<[string, URL | string, string]> = [
    ['/console', own('index.html'), 'text/html; charset=utf-8'],
    // console.js and each page's own module (console/<page>.js, loaded by index.html).
    ...readdirSync(own(''))
      .filter((f) => f.endsWith('.js'))
      .map((f): [string, URL, string] => [`/console/${f}`, own(f), 'text/javascript; charset=utf-8']),
    ['/console/console.css', own('console.css'), 'text/css; charset=utf-8'],
    // A file of its own, not a data: URI: img-src 'self' (which favicons fall under) stays as is.
    ['/console/favicon.svg', own('favicon.svg'), 'image/svg+xml'],
    // uPlot (MIT), served from node_modules as published: the plots, no chart code of ours.
    ['/console/vendor/uPlot.iife.min.js', require.resolve('uplot/dist/uPlot.iife.min.js'), 'text/javascript; charset=utf-8'],
    ['/console/vendor/uPlot.min.css', require.resolve('uplot/dist/uPlot.min.css'), 'text/css; charset=utf-8'],
  ];
  return new Map(files.map(([route, file, type]) => [route, { body: readFileSync(file), type }]));
}

function secure(reply: FastifyReply): FastifyReply {
  return reply
    .header('Content-Security-Policy', CONSOLE_CSP)
    .header('X-Content-Type-Options', 'nosniff')
    .header('Referrer-Policy', 'no-referrer')
    .header('X-Frame-Options', 'DENY')
    .header('Cross-Origin-Opener-Policy', 'same-origin')
    .header('Cross-Origin-Resource-Policy', 'same-origin')
    .header('Cache-Control', 'no-cache');
}

export function registerConsole(app: FastifyInstance): void {
  const files = assets();
  for (const [route, asset] of files) {
    app.get(route, async (_req, reply) => secure(reply).type(asset.type).send(asset.body));
  }
  // Relative: under a prefix (`app.register(durableJobs, { prefix })`) it stays under it.
  app.get('/console/', async (_req, reply) => reply.redirect('../console', 301));
}
