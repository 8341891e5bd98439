// The upstream adapter's own cost (issue 37 "Done means"): one call through the adapter layer a
// step's effect goes through (`ctx.effect(step, api.request(path, body), { upstream: api })`:
// activities/upstream-call.ts `upstreamAdapter` — the timeout and cancellation race, the
// classification, the answer as the ledger stores it — around `httpUpstream`'s request with its
// headers and idempotency key) against the same `fetch` made directly (same URL, headers, body,
// a timeout signal, the body parsed and the IDs read), against a local HTTP server, interleaved
// call by call (ABBA) in the same process and run. The ledger is not in it: the `effects.added`
// row above measures the bookkeeping.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { httpUpstream } from '../../activities/http-upstream.js';
import { upstreamAdapter } from '../../activities/upstream-call.js';
import { alternate, percentiles, row, spread, type BenchRow } from './stats.js';

export async function measureAdapterCost(o: { quick: boolean; log: (line: string) => void }): Promise<BenchRow[]> {
  const calls = o.quick ? 200 : 1_000;
  const repeats = o.quick ? 3 : 7;
  let n = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      n++;
      res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': `req_${n}` });
      res.end(JSON.stringify({ id: `obj_${n}`, object: 'thing', status: 'ok' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const api = httpUpstream({ name: 'bench', baseUrl: base, headers: { authorization: 'Bearer bench' } });
  const body = { amount: 1200, currency: 'EUR', customer: 'cus_bench' };
  const signal = new AbortController().signal;
  const viaAdapter = (i: number) =>
    upstreamAdapter(api, api.request('/v1/things', body)).call({ effectKey: `bench:${i}`, attempt: 1, timeoutMs: 10_000, signal });
  const direct = async (i: number) => {
    const res = await fetch(`${base}/v1/things`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer bench', 'Idempotency-Key': `bench:${i}` },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    const b = (await res.json()) as { id?: string };
    return { providerId: b.id ?? null, providerRequestId: res.headers.get('x-request-id') };
  };
  const perRepeat = { adapter: [] as number[], direct: [] as number[] };
  try {
    for (let i = 0; i < 100; i++) await Promise.all([viaAdapter(i), direct(i)]);
    for (let r = 0; r < repeats; r++) {
      const a: number[] = [];
      const d: number[] = [];
      for (let i = 0; i < calls; i++) {
        for (const side of alternate(['adapter', 'direct'] as const, i + r)) {
          const t0 = performance.now();
          if (side === 'adapter') await viaAdapter(i);
          else await direct(i);
          (side === 'adapter' ? a : d).push(performance.now() - t0);
        }
      }
      perRepeat.adapter.push(percentiles(a).p50);
      perRepeat.direct.push(percentiles(d).p50);
      o.log(
        `  adapter repeat ${r + 1}/${repeats}: adapter call p50 ${perRepeat.adapter.at(-1)!.toFixed(3)} ms, direct fetch ${perRepeat.direct.at(-1)!.toFixed(3)} ms`,
      );
    }
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
  return [
    row({
      id: 'effects.adapter',
      section: 'effect recording',
      figure: `one upstream call through the adapter (upstreamAdapter + httpUpstream) vs the same fetch made directly, local HTTP server, p50 of ${calls} interleaved calls per repeat`,
      unit: 'ms',
      value: spread(perRepeat.adapter),
      baseline: { label: 'the same fetch made directly, same run, interleaved', unit: 'ms', value: spread(perRepeat.direct) },
      sense: 'lower-better',
      paired: true,
      notes: `ratio: median of ${repeats} per-repeat p50 ratios (ratioSpread: their min/max/IQR); added per call ${(spread(perRepeat.adapter).median - spread(perRepeat.direct).median).toFixed(3)} ms`,
    }),
  ];
}
