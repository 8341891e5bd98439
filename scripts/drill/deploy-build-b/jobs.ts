/**
 * Build B's job registry (`DURABLE_JOBS_JOBS` of drill item 14's B workers): the shipped types,
 * with summarize's workflows from ./workflow.ts (its changed body) and its activities unchanged.
 */
import { createJobRegistry, jobType } from '../../../job-api/index.js';
import { builtInJobTypes } from '../../../jobs/index.js';
import { createSummarizeActivities } from '../../../jobs/summarize/activities.js';
import { summarize } from '../../../jobs/summarize/definition.js';

export default createJobRegistry([
  jobType(summarize, { workflows: new URL('./workflow.ts', import.meta.url), activities: createSummarizeActivities }),
  ...builtInJobTypes.filter((t) => t.definition.name !== summarize.name),
]);
