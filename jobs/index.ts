/** The shipped job types. Add yours with one line (`createJobRegistry([...builtInJobTypes, myJobType])`). */
import { digestJobType } from './digest/activities.js';
import { purchaseJobType } from './purchase/activities.js';
import { createJobRegistry, type JobTypeModule } from '../job-api/index.js';
import { summarizeJobType } from './summarize/activities.js';
import { transcribeJobType } from './transcribe/activities.js';

export const builtInJobTypes: readonly JobTypeModule[] = [summarizeJobType, purchaseJobType, transcribeJobType, digestJobType];

export const defaultJobRegistry = createJobRegistry(builtInJobTypes);

/** The module's registry for `--jobs jobs/index.ts` (`npm start` is `durable-jobs dev` with it). */
export default defaultJobRegistry;
