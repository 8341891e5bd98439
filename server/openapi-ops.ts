/**
 * The operational routes of the OpenAPI document (server/openapi.ts): on the public listener
 * `/metrics` and `/openapi.json` need an admin key and `/readyz` shows its reasons only with one;
 * the admin listener serves all three without a key (server/admin-listener.ts, F7).
 */
export function opsPaths(problemResponse: (description: string) => unknown): Record<string, unknown> {
  return {
    '/healthz': { get: { summary: 'process up', security: [], responses: { 200: { description: 'up' } } } },
    '/readyz': {
      get: {
        summary:
          'Postgres reachable and Temporal would accept a job (namespace, search attributes, history). Without a key: ready or not only; with an admin key (or on the admin listener, ADMIN_LISTEN_PORT): each check and its error',
        security: [{}, { bearer: [] }],
        responses: {
          200: { description: 'ready' },
          401: problemResponse('a key that is not an admin key'),
          503: problemResponse('not ready'),
        },
      },
    },
    '/metrics': {
      get: {
        summary: 'Prometheus metrics (admin key; without one on the admin listener, ADMIN_LISTEN_PORT)',
        responses: { 200: { description: 'text exposition format' }, 401: problemResponse('admin key required') },
      },
    },
    '/openapi.json': {
      get: {
        summary: 'this document (admin key; without one on the admin listener, ADMIN_LISTEN_PORT)',
        responses: { 200: { description: 'OpenAPI 3.0 document' }, 401: problemResponse('admin key required') },
      },
    },
  };
}
