import { defineJob } from '../../job-api/workflow.js';
import { z } from 'zod';

export const purchase = defineJob({
  name: 'purchase',
  workflowType: 'purchaseJob',
  description: 'charge a customer, then send the receipt: two effects in sequence',
  input: z
    .object({
      amountCents: z.number().int('amountCents must be a whole number of cents').positive('amountCents must be positive').max(100_000_000),
      currency: z.string().regex(/^[A-Z]{3}$/, 'currency must be an ISO 4217 code such as EUR'),
      customer: z.string().min(1).max(200),
      receiptEmail: z.email('receiptEmail must be an e-mail address'),
    })
    .strict(),
  effects: ['charge', 'receipt'],
  // A charge in doubt is looked up before anything is sent again.
  upstream: { idempotentByKey: true, lookupByKey: true },
});
