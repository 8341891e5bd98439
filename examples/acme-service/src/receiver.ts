// The service's receiver of durable-jobs completion webhooks: verifies each delivery with the
// official Standard Webhooks library and the secret `PUT /v1/admin/tenants/{id}/completion-webhook`
// returned, and handles each `webhook-id` once (a retry of a delivery it already took is
// answered 200 and ignored, as the spec asks receivers to do).
import { createServer, type Server } from 'node:http';
import { Webhook } from 'standardwebhooks';

export interface CompletionEvent {
  type: 'job.succeeded';
  timestamp: string;
  data: { jobId: string; type: string; tenantId: string; status: string; result?: unknown };
}

export interface Receiver {
  readonly server: Server;
  /** Each event once, in the order they arrived. */
  readonly events: CompletionEvent[];
  /** Every delivery attempt that verified (retries included), by webhook-id. */
  readonly deliveries: string[];
  close(): Promise<void>;
}

export function startReceiver(o: { port: number; host?: string; secret: string }): Promise<Receiver> {
  const wh = new Webhook(o.secret);
  const seen = new Set<string>();
  const events: CompletionEvent[] = [];
  const deliveries: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let event: CompletionEvent;
      try {
        event = wh.verify(Buffer.concat(chunks).toString('utf8'), req.headers as Record<string, string>) as CompletionEvent;
      } catch {
        res.writeHead(400).end();
        return;
      }
      const id = String(req.headers['webhook-id']);
      deliveries.push(id);
      if (!seen.has(id)) {
        seen.add(id);
        events.push(event);
      }
      res.writeHead(204).end();
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host ?? '127.0.0.1', () =>
      resolve({ server, events, deliveries, close: () => new Promise<void>((r) => server.close(() => r())) }),
    );
  });
}
