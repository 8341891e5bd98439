// The dependencies every activity receives: declared with the job-definition API (a job type's
// activity factory takes them), re-exported here for the product's own activities.
export type { ActivityDeps } from '../job-api/registry.js';
