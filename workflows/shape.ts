import { patched } from '@temporalio/workflow';

/**
 * A change guarded by `patched(id)` for runs started before it. A workflow type born after
 * the change (`current`: the fast-path types, whose histories all postdate every patch here)
 * takes the new branch without the patch call, so without its marker and the
 * `TemporalChangeVersion` upsert the SDK adds (one action and two history events each).
 *
 * Why not a flag in the workflow input, for every type: a worker without this code (a rolling
 * deploy) would run such a job with the patch calls and record their markers, and a worker
 * with it would then replay that history without the calls: non-determinism. A workflow type
 * that an older worker does not know cannot be run by it at all.
 */
export function changed(current: boolean, patchId: string): boolean {
  return current || patched(patchId);
}
