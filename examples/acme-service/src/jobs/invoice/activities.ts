// The Node side of `invoice`: each step is one effect through `ctx.effect`, keyed
// `<jobId>:<step>`, so a retry, a crash or a replay never charges or e-mails twice.
import {
  completeWithOutbox,
  credential,
  httpUpstream,
  jobType,
  runStep,
  type ActivityDeps,
  type JobInput,
  type StepArgs,
} from 'durable-jobs/jobs';
import { invoice, type InvoiceActivities } from './definition.js';

type Input = JobInput<typeof invoice>;

/**
 * The payments service: a plain HTTP API that is idempotent by key, called with a bearer key
 * read once at worker start (ACME_PAYMENTS_KEY or the file ACME_PAYMENTS_KEY_FILE names).
 * Its 4xx answers stop the job with the service's own error code; 429/5xx retry on Retry-After.
 */
export const payments = httpUpstream({
  name: 'payments',
  baseUrl: () => process.env.ACME_PAYMENTS_URL ?? 'http://127.0.0.1:8090',
  headers: { authorization: { credential: credential('ACME_PAYMENTS_KEY'), prefix: 'Bearer ' } },
});

export function createInvoiceActivities(deps: ActivityDeps): InvoiceActivities {
  return {
    async chargeOrder(args) {
      return runStep(deps, args, 'charge', async (ctx) => {
        const input = await ctx.input<Input>();
        const e = await ctx.effect(
          invoice.step('charge'),
          payments.request('/v1/payments', { order: input.orderId, amountCents: input.amountCents }),
          { upstream: payments },
        );
        return { chargeId: e.providerId ?? 'unknown' };
      });
    },
    async emailInvoice(args: StepArgs) {
      return runStep(deps, args, 'email', async (ctx) => {
        const input = await ctx.input<Input>();
        const e = await ctx.effect(
          invoice.step('email'),
          '/v1/emails',
          { to: input.email, subject: `Invoice for order ${input.orderId}` },
          { storeWithResult: true },
        );
        return { resultStored: await completeWithOutbox(deps, ctx, { emailId: e.providerId, orderId: input.orderId }) };
      });
    },
  };
}

export const invoiceJobType = jobType(invoice, {
  workflows: new URL('./definition.ts', import.meta.url),
  activities: createInvoiceActivities,
  upstreams: [payments],
});
