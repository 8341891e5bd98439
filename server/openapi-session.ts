/**
 * The console's session routes of the OpenAPI document (server/openapi.ts, server/sessions.ts).
 * `problemResponse` is the document's own.
 */
export function sessionPaths(problemResponse: (description: string) => unknown): Record<string, unknown> {
  return {
    '/v1/admin/session': {
      post: {
        summary:
          'The console trades an admin key (Bearer; never a session) for a session: an HttpOnly, SameSite=Strict cookie (Secure over TLS) with idle and absolute timeouts (any role)',
        responses: {
          201: { description: '{"operator","role","tenants","may","expiresAt","idleTimeoutSeconds"} and Set-Cookie' },
          401: problemResponse('not an admin key, or no Bearer key'),
        },
      },
      delete: {
        summary:
          'Sign-out: the session of the cookie ends on the server. Through a session, every change needs the x-durable-jobs-console: 1 header (cross-site requests are refused, 403 cross-site-request)',
        responses: { 204: { description: 'ended; the cookie is cleared' }, 401: problemResponse('no live session or key') },
      },
    },
  };
}
