// The workflow bundle's entry: every exported function is a workflow type.
export { summarizeJob } from './summarize.js';
export { purchaseJob } from './purchase.js';
export { transcribeJob } from './transcribe.js';
export { digestJob } from './digest.js';
export { scheduleTrigger } from './schedule-trigger.js';
export { compensationScan } from './scan.js';
export { replayDeadLetters } from './replay.js';
export { redeliverOutbox } from './outbox-replay.js';
