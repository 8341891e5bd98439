import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { defineQuery } from '@temporalio/workflow';

/** Signals, queries and updates have explicit, stable names: they are part of the wire contract. */
export const jobProgressQuery = defineQuery<{ phase: string; detail: string }>('jobProgress');

export const JobStateKey = defineSearchAttributeKey('JobState', SearchAttributeType.KEYWORD);
