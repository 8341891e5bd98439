// Slow clients beside normal ones (issue 39 §1, F1): POST /v1/jobs p50 while N connections sit
// on the same API with their headers sent and their body trickling (a byte a second, no key),
// against the same p50 with none open, in the same run. Each repeat measures both sides (ABBA
// order across repeats); the slow connections are opened before and closed after their side.
// The bar is a ratio of at most 2x; it is reported here, never asserted in a test. Default
// limits (server/limits.ts): the 30 s request timeout outlasts each side.
import type { Server } from 'node:http';
import net from 'node:net';
import { once } from 'node:events';
import { TENANT, uid, type BenchStack } from './stack.js';
import { alternate, percentiles, row, spread, timed, waitUntil, type BenchRow } from './stats.js';

interface Slow {
  sockets: net.Socket[];
  closedEarly(): number;
  close(): void;
}

/** `n` connections that send complete headers announcing 200 KB, then one byte a second. */
async function openSlow(port: number, n: number): Promise<Slow> {
  const sockets: net.Socket[] = [];
  let closed = 0;
  let closing = false;
  const drip = setInterval(() => {
    for (const s of sockets) if (!s.destroyed) s.write(' ');
  }, 1_000);
  for (let i = 0; i < n; i++) {
    const s = net.connect(port, '127.0.0.1');
    s.on('error', () => undefined);
    s.on('close', () => {
      if (!closing) closed++;
    });
    sockets.push(s);
    await once(s, 'connect');
    s.write('POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 200000\r\n\r\n{');
  }
  return {
    sockets,
    closedEarly: () => closed,
    close() {
      closing = true;
      clearInterval(drip);
      for (const s of sockets) s.destroy();
    },
  };
}

export async function measureSlowBodies(stack: BenchStack): Promise<BenchRow[]> {
  const m = stack.quick ? 10 : 100;
  const repeats = stack.quick ? 2 : 5;
  const slowCount = stack.quick ? 20 : 200;
  // No worker polls this queue: the jobs only need to be accepted.
  let server: Server | undefined;
  const app = await stack.startApp(`bench-slow-bodies-noworker-${uid()}`, { setup: (a) => (server = a.server) });
  const connections = () => new Promise<number>((res) => server!.getConnections((_e, c) => res(c ?? 0)));
  const port = Number(new URL(app.baseUrl).port);
  const submit = async (): Promise<void> => {
    const res = await fetch(`${app.baseUrl}/v1/jobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TENANT.key}`, 'idempotency-key': `bench-slow-${uid()}`, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'summarize', input: { text: 'A normal submit beside slow clients.' } }),
    });
    await res.text();
    if (res.status !== 202) throw new Error(`POST /v1/jobs answered ${res.status}`);
  };
  const block = async (): Promise<number[]> => {
    const lat: number[] = [];
    for (let i = 0; i < m; i++) lat.push((await timed(submit)).ms);
    return lat;
  };
  const without: number[] = [];
  const withSlow: number[] = [];
  let closedEarly = 0;
  try {
    for (let i = 0; i < 10; i++) await submit(); // warm-up: connections, JIT
    for (let r = 0; r < repeats; r++) {
      for (const side of alternate(['without', 'with'] as const, r)) {
        if (side === 'without') {
          without.push(percentiles(await block()).p50);
          continue;
        }
        const slow = await openSlow(port, slowCount);
        try {
          // Every slow connection is at the server, its request begun, before the first timed submit.
          await waitUntil(`${slowCount} slow connections at the API`, async () => (await connections()) >= slowCount, 60_000);
          withSlow.push(percentiles(await block()).p50);
          closedEarly += slow.closedEarly();
        } finally {
          slow.close();
        }
      }
      stack.log(
        `  slow bodies repeat ${r + 1}/${repeats}: POST p50 ${withSlow.at(-1)!.toFixed(1)} ms with ${slowCount} slow connections, ${without.at(-1)!.toFixed(1)} ms without`,
      );
    }
  } finally {
    await app.close();
  }
  return [
    row({
      id: 'abuse.submit-with-slow-bodies.p50',
      section: 'abuse',
      figure: `POST /v1/jobs p50 with ${slowCount} slow-body connections open (headers sent, a byte a second; ${m} sequential submits per side and repeat)`,
      unit: 'ms',
      value: spread(withSlow),
      baseline: { label: 'same, no slow connection open', unit: 'ms', value: spread(without) },
      sense: 'lower-better',
      paired: true,
      notes: `issue 39 F1 asks at most 2x; slow connections the server closed during a side: ${closedEarly} (the 30 s request timeout closes one whose side outlasts it: a loaded machine)`,
      details: { slowConnections: slowCount, submitsPerSide: m, closedEarly },
    }),
  ];
}
