// The product's own workflows. Under Worker Versioning (workers/versioning.ts) the short ones
// (schedule trigger, scan, outbox redelivery: seconds to minutes) are pinned like every job, so
// they finish on the build that started them; the long-lived replay and bulk action, and the
// retention cleanup, auto-upgrade (each says why where it is defined).
// A worker's bundle entry re-exports these and each registered
// job type's workflow (`workers/worker.ts` writes that entry): every exported function is a workflow type.
export { scheduleTrigger } from './schedule-trigger.js';
export { compensationScan } from './scan.js';
export { replayDeadLetters } from './replay.js';
export { redeliverOutbox } from './outbox-replay.js';
export { retentionCleanup } from './retention.js';
export { bulkAction } from './bulk-action.js';
