/**
 * The remote codec endpoint (Temporal's codec server protocol): `POST /codec/encode` and
 * `POST /codec/decode` take and give `{"payloads": [{"metadata": {k: base64}, "data": base64}]}`,
 * so the Temporal Web UI (its "Codec Server" setting) and the CLI (`temporal workflow show
 * --codec-endpoint <api>/codec --codec-auth "Bearer <operator key>"`) show the payloads the
 * payload codec encrypted (`lib/payload-codec.ts`, security review F6) in clear, to an
 * operator only: every call needs an admin key, which the throttle and audit of every admin
 * route cover. Without configured keys both pass payloads through unchanged.
 *
 * CORS: only the Web UI's origin (`TEMPORAL_UI_URL`) may call it from a browser; a preflight
 * from any other origin gets no CORS headers, so the browser refuses the call.
 */
import type { PayloadCodec, Payload } from '@temporalio/common';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ValidationError } from '../lib/errors.js';
import { requireAdmin, type AdminKeys } from './auth.js';
import { parseOr400 } from './problems.js';

export interface CodecRouteDeps {
  /** The codec the workers and the API's client run; undefined: encryption off, payloads pass through. */
  codec: PayloadCodec | undefined;
  adminApiKey: AdminKeys;
  /** The Temporal Web UI's base URL (`TEMPORAL_UI_URL`): its origin is the one CORS allows. Undefined: none. */
  temporalUiUrl: string | undefined;
}

/** At most this many payloads per call (the Web UI sends one event's payloads at a time). */
const MAX_PAYLOADS = 1_000;
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;
const base64 = z.string().regex(BASE64, 'must be base64');

const CODEC_BODY = z.object({
  payloads: z
    .array(
      z.object({
        metadata: z.record(z.string(), base64).optional(),
        data: base64.optional(),
      }),
    )
    .max(MAX_PAYLOADS, `at most ${MAX_PAYLOADS} payloads per call`),
});
type JsonPayload = z.infer<typeof CODEC_BODY>['payloads'][number];

const fromJson = (p: JsonPayload): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(p.data ?? '', 'base64'),
});

const toJson = (p: Payload): JsonPayload => ({
  metadata: Object.fromEntries(
    Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? new Uint8Array()).toString('base64')]),
  ),
  data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
});

const originOf = (url: string | undefined): string | undefined => {
  if (!url) return undefined;
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
};

export function registerCodecRoutes(app: FastifyInstance, deps: CodecRouteDeps): void {
  const allowedOrigin = originOf(deps.temporalUiUrl);

  /** CORS headers for the Web UI's origin only; another origin's browser call is refused by the browser. */
  const cors = (req: FastifyRequest, reply: FastifyReply) => {
    reply.header('Vary', 'Origin');
    if (allowedOrigin !== undefined && req.headers.origin === allowedOrigin) {
      reply.header('Access-Control-Allow-Origin', allowedOrigin);
      reply.header('Access-Control-Allow-Credentials', 'true');
    }
  };

  for (const op of ['encode', 'decode'] as const) {
    const path = `/codec/${op}`;
    // The preflight carries no credentials (browsers never send them on OPTIONS): it only says what may follow.
    app.options(path, async (req, reply) => {
      cors(req, reply);
      if (reply.hasHeader('Access-Control-Allow-Origin')) {
        reply.header('Access-Control-Allow-Methods', 'POST');
        reply.header('Access-Control-Allow-Headers', 'Authorization, Content-Type, X-Namespace');
        reply.header('Access-Control-Max-Age', '600');
      }
      return reply.code(204).send();
    });

    app.post(path, async (req, reply) => {
      cors(req, reply);
      if (!requireAdmin(deps.adminApiKey, req, reply)) return reply;
      const body = parseOr400(CODEC_BODY, req.body ?? {}, 'body');
      const payloads = body.payloads.map(fromJson);
      if (!deps.codec) return { payloads: payloads.map(toJson) };
      try {
        const out = op === 'encode' ? await deps.codec.encode(payloads) : await deps.codec.decode(payloads);
        return { payloads: out.map(toJson) };
      } catch (err) {
        // A payload of a key no longer listed, or tampered with: the caller's input, named, never echoed.
        throw new ValidationError(`cannot ${op} the payloads`, [{ path: 'payloads', message: (err as Error).message }]);
      }
    });
  }
}
