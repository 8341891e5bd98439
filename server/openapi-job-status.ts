import { JOB_STATES } from '../contract/job-types.js';

/** The status of one job (GET /v1/jobs/{jobId}, and each job of GET /v1/jobs), as services/job-status.ts builds it. */
export function jobStatusSchema(): Record<string, unknown> {
  return {
    type: 'object',
    required: ['jobId', 'type', 'status', 'attempts', 'createdAt', 'updatedAt'],
    properties: {
      jobId: { type: 'string' },
      type: { type: 'string' },
      status: { type: 'string', enum: [...JOB_STATES] },
      attempts: { type: 'integer', description: "the job's highest attempt of any step (its dead letter adds every step's)" },
      createdAt: { type: 'string', format: 'date-time' },
      updatedAt: { type: 'string', format: 'date-time' },
      result: {},
      error: { type: 'object' },
      deadLetterId: { type: 'string' },
      nextPollSeconds: { type: 'integer' },
      scheduledFor: {
        type: 'string',
        format: 'date-time',
        description: 'a delayed job: when it may start (UTC); status is scheduled until then, queued after',
      },
      tags: { type: 'object', additionalProperties: { type: 'string' }, description: 'the business tags its submitter set' },
      stage: {
        type: 'string',
        description:
          'GET /v1/jobs/{jobId}: the stage the job is in or failed at (intake, claim, side effects, completion), in words, from Postgres',
      },
      nextStep: { type: 'string', description: 'GET /v1/jobs/{jobId}: the next expected step, in words' },
      engine: {
        type: 'object',
        description:
          'GET /v1/jobs/{jobId}, only while the job is unfinished and Temporal shows it (asked with a short deadline; absent if it does not answer): what holds the job in the engine, which stage cannot see',
        required: ['kind', 'message'],
        properties: {
          kind: {
            type: 'string',
            enum: ['workflow-task-failing', 'no-poller', 'activity-paused'],
            description:
              'workflow-task-failing: the engine fails the workflow task again and again (a non-deterministic deploy, a worker without the type, a broken bundle); no-poller: no worker polls for the job type; activity-paused: an operator paused a step in Temporal',
          },
          message: { type: 'string', description: 'one line: what holds the job and what happens next (never a stack trace)' },
          buildId: { type: 'string', description: 'workflow-task-failing: the build ID of the failing workers, when known' },
          since: { type: 'string', format: 'date-time', description: 'activity-paused: since when (UTC)' },
        },
      },
      upstream: {
        type: 'string',
        enum: ['primary', 'fallback'],
        description: 'job types with a fallback: where its effects went ("fallback" once any did, by an operator\'s decision)',
      },
      upstreamReason: {
        type: 'string',
        description: 'who enabled the fallback and since when, or why the job stayed on the primary',
      },
      staleResult: {
        type: 'object',
        description: "only with ?allowStale=true, while this job has no result: an earlier job's result for the same input, never live",
        required: ['stale', 'result', 'at', 'fromJobId'],
        properties: {
          stale: { type: 'boolean', enum: [true] },
          result: {},
          at: { type: 'string', format: 'date-time', description: 'when that job finished (UTC)' },
          fromJobId: { type: 'string' },
        },
      },
    },
  };
}
