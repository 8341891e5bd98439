// `invoice`: charge the customer, then e-mail the invoice. Two effects, each with its own
// stable step name (part of its effect key), on a task queue of its own: only workers given
// this type (the billing workers) run it. Workflow-safe: Temporal bundles this file.
import { z } from 'zod';
import { budgetOf, defineJob, runJob, stepActivities, type JobOutcome, type StepArgs } from 'durable-jobs/jobs/workflow';

export const invoice = defineJob({
  name: 'invoice',
  workflowType: 'invoiceJob',
  description: 'charge a customer for an order, then e-mail the invoice',
  input: z
    .object({
      orderId: z.string().min(1),
      amountCents: z.number().int().positive(),
      email: z.email(),
    })
    .strict(),
  effects: ['charge', 'email'],
  budget: { maximumAttempts: 4, heartbeatTimeoutMs: 5_000 },
  taskQueue: 'acme-billing',
});

export interface InvoiceActivities {
  chargeOrder(args: StepArgs): Promise<{ chargeId: string }>;
  emailInvoice(args: StepArgs): Promise<{ resultStored: boolean }>;
}

export async function invoiceJob(args: StepArgs): Promise<JobOutcome> {
  const steps = stepActivities<InvoiceActivities>(budgetOf(invoice, args));
  return runJob(args, invoice, async () => {
    await steps.chargeOrder(args);
    return steps.emailInvoice(args);
  });
}
