// The cost of effect recording. The same upstream call (`POST /v1/summaries` on the simulator)
// three ways, each inside MockActivityEnvironment (a real activity context, no worker, so the
// engine's scheduling noise stays out and only the bookkeeping differs), against the real
// database and simulator:
//   plain:   the provider adapter alone (what an activity without bookkeeping does);
//   effect:  runEffect: claim the effect row, call, store the provider's IDs, record the attempt;
//   slot:    runEffect with the concurrency slot around the call, as summarizeText runs it.
import { MockActivityEnvironment } from '@temporalio/testing';
import { withSlot } from '../../activities/concurrency.js';
import { runEffect, type EffectResult } from '../../activities/effects.js';
import { createProvider } from '../../activities/provider.js';
import { TENANT, uid, type BenchStack } from './stack.js';
import { percentiles, row, spread, timed, type BenchRow } from './stats.js';

type Mode = 'plain' | 'effect' | 'slot';

export async function measureEffectCost(stack: BenchStack): Promise<BenchRow[]> {
  const m = stack.quick ? 15 : 200;
  const repeats = stack.quick ? 2 : 3;
  const provider = createProvider(stack.sim.url);
  const deps = { pool: stack.pool, provider, log: stack.silentLogger };
  const env = new MockActivityEnvironment({ attempt: 1 });
  const body = { text: 'Effect recording benchmark: a short text to summarize.' };
  const limits = { perTenant: 1_000, global: 1_000 };

  const once = async (mode: Mode): Promise<void> => {
    const jobId = `bench-effect-${uid()}`;
    if (mode === 'plain') {
      await env.run(() =>
        provider({ path: '/v1/summaries', body, effectKey: `${jobId}:summarize`, tenantId: TENANT.id, timeoutMs: 15_000 }),
      );
      return;
    }
    const r: EffectResult = await env.run(() =>
      runEffect(deps, {
        effectScope: jobId,
        jobId,
        tenantId: TENANT.id,
        step: 'summarize',
        path: '/v1/summaries',
        body,
        timeoutMs: 15_000,
        startedAt: new Date(),
        ...(mode === 'slot'
          ? {
              guard: <T>(call: () => Promise<T>) =>
                withSlot(
                  deps,
                  { jobId, jobType: 'summarize', tenantId: TENANT.id, holder: `${jobId}:summarize#1`, attempt: 1, limits },
                  call,
                ),
            }
          : {}),
      }),
    );
    if (r.via !== 'executed') throw new Error(`a fresh effect was ${r.via}, not executed`);
  };

  const p50: Record<Mode, number[]> = { plain: [], effect: [], slot: [] };
  const mean: Record<Mode, number[]> = { plain: [], effect: [], slot: [] };
  for (let i = 0; i < 10; i++) for (const mode of ['plain', 'effect', 'slot'] as const) await once(mode); // warm-up
  for (let r = 0; r < repeats; r++) {
    for (const mode of ['plain', 'effect', 'slot'] as const) {
      const lat: number[] = [];
      for (let i = 0; i < m; i++) lat.push((await timed(() => once(mode))).ms);
      p50[mode].push(percentiles(lat).p50);
      mean[mode].push(lat.reduce((a, b) => a + b, 0) / lat.length);
    }
    stack.log(
      `  effect cost repeat ${r + 1}/${repeats}: p50 plain ${p50.plain.at(-1)!.toFixed(2)} ms, runEffect ${p50.effect.at(-1)!.toFixed(2)} ms, + slot ${p50.slot.at(-1)!.toFixed(2)} ms`,
    );
  }
  const plain = { label: 'plain provider call p50', unit: 'ms', value: spread(p50.plain) };
  const addedMs = p50.effect.map((v, i) => v - p50.plain[i]!);
  return [
    row({
      id: 'effects.run-effect.p50',
      section: 'effect recording',
      figure: `activity with effect bookkeeping (runEffect) p50, ${m} calls per repeat`,
      unit: 'ms',
      value: spread(p50.effect),
      baseline: plain,
      sense: 'lower-better',
      notes: `added per effect: median ${spread(addedMs).median.toFixed(2)} ms (3 extra statements, each its own commit)`,
      details: { meanMs: { plain: spread(mean.plain), effect: spread(mean.effect), slot: spread(mean.slot) } },
    }),
    row({
      id: 'effects.run-effect-slot.p50',
      section: 'effect recording',
      figure: 'runEffect + concurrency slot (as summarizeText) p50',
      unit: 'ms',
      value: spread(p50.slot),
      baseline: plain,
      sense: 'lower-better',
    }),
  ];
}
