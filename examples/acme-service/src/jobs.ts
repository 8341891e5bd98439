// The service's job registry: what `durable-jobs worker --jobs src/jobs.ts`, its API and its
// client all load, so they agree on the types.
import { createJobRegistry } from 'durable-jobs/jobs';
import { invoiceJobType } from './jobs/invoice/activities.js';
import { welcomeJobType } from './jobs/welcome/activities.js';
import { orderShippedJobType } from './jobs/shipped/activities.js';
import { chargeOrderJobType } from './jobs/charge-order/activities.js';
import { welcomeEmailJobType } from './jobs/welcome-email/activities.js';
import { dailyReportJobType } from './jobs/daily-report/activities.js';
import { orderReceiptJobType } from './jobs/order-receipt/activities.js';

export default createJobRegistry([
  invoiceJobType,
  welcomeJobType,
  orderShippedJobType,
  chargeOrderJobType,
  welcomeEmailJobType,
  dailyReportJobType,
  orderReceiptJobType,
]);
