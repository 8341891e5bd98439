import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

export type JsonObject = Record<string, unknown>;

/** What a handler answers; `send` adds the request ID header and body field. */
export interface Reply {
  status: number;
  body?: JsonObject;
  headers?: Record<string, string>;
}

export type LogFn = (msg: string, fields?: Record<string, unknown>) => void;

/** Bodies above this are refused: the product never sends more than ~100 KB of text. */
export const MAX_BODY_BYTES = 1024 * 1024;

export class BodyTooLargeError extends Error {}

export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}

export function errorReply(status: number, error: string, extra: JsonObject = {}): Reply {
  return { status, body: { error, ...extra } };
}

export function readBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        // Keep draining without buffering so the client still gets our 413.
        req.removeAllListeners('data');
        req.resume();
        reject(new BodyTooLargeError(`body exceeds ${limit} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Parses a JSON object body; anything else (including arrays) is a client error. */
export function parseJsonObject(raw: string): { ok: true; value: JsonObject } | { ok: false; reply: Reply } {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return { ok: false, reply: errorReply(400, 'invalid_json') };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, reply: errorReply(400, 'invalid_body', { message: 'body must be a JSON object' }) };
  }
  return { ok: true, value: value as JsonObject };
}

/**
 * Writes a JSON reply. A replayed body keeps the requestId it was first answered with;
 * every other body gets this request's ID, so both sides can quote it to support.
 */
export function send(res: ServerResponse, requestId: string, reply: Reply): void {
  if (res.headersSent || res.destroyed) return;
  const headers: Record<string, string> = { 'X-Request-Id': requestId, ...reply.headers };
  if (reply.body === undefined) {
    res.writeHead(reply.status, headers);
    res.end();
    return;
  }
  const body = 'requestId' in reply.body ? reply.body : { ...reply.body, requestId };
  const text = JSON.stringify(body);
  headers['Content-Type'] = 'application/json';
  headers['Content-Length'] = String(Buffer.byteLength(text));
  res.writeHead(reply.status, headers);
  res.end(text);
}

export function headerValue(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
