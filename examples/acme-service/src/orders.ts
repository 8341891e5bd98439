// The service's own code path that starts a job: the typed client, with the order ID as the
// business intent (the idempotency key), so a retried request never bills twice.
import type { JobsClient, SubmitJobResult } from 'durable-jobs/client';

export async function billOrder(
  jobs: JobsClient,
  tenantId: string,
  order: { id: string; amountCents: number; email: string },
): Promise<SubmitJobResult> {
  return jobs.submitJob({
    tenantId,
    type: 'invoice',
    idempotencyKey: `order-${order.id}-invoice`,
    input: { orderId: order.id, amountCents: order.amountCents, email: order.email },
  });
}
