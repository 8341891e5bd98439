import { competingWorkers, crashAfterEffect, intake, restarts, retries } from './items-core.js';
import { deadLetters, schedules, webhooks } from './items-ops.js';
import { degradation, metrics } from './items-health.js';
import { topology } from './items-topology.js';
import { fairness } from './items-flow.js';
import { bulkCancel } from './items-bulk.js';
import { rollingDeploy } from './items-deploy.js';
import type { DrillItem } from './support.js';

/** The checklist, in the guide's order. */
export const coreItems: DrillItem[] = [
  intake,
  competingWorkers,
  crashAfterEffect,
  retries,
  deadLetters,
  schedules,
  webhooks,
  metrics,
  degradation,
  restarts,
  topology,
  fairness,
  bulkCancel,
  rollingDeploy,
];
