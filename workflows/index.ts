// The product's own workflows. A worker's bundle entry re-exports these and each registered
// job type's workflow (`workers/worker.ts` writes that entry): every exported function is a workflow type.
export { scheduleTrigger } from './schedule-trigger.js';
export { compensationScan } from './scan.js';
export { replayDeadLetters } from './replay.js';
export { redeliverOutbox } from './outbox-replay.js';
export { retentionCleanup } from './retention.js';
export { bulkAction } from './bulk-action.js';
