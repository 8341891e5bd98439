// The workflow bundle's entry: every exported function is a workflow type.
export { summarizeJob } from './summarize.js';
export { purchaseJob } from './purchase.js';
