// The payload codec's cost (security review F6): the same `summarize` jobs end to end with and
// without the AES-256-GCM codec (PAYLOAD_CODEC_KEYS) in the same run, each side with a worker
// process of its own (the codec's with the keys) and the intake's Temporal client with or without
// the codec; sides alternate (AB, BA, ...) and the ratio is the median of the per-repeat ratios.
// Plus the codec alone: encode + decode of one payload the size of a summarize step's, in this process.
import { randomBytes } from 'node:crypto';
import { Client } from '@temporalio/client';
import { createJobsClient } from '../../services/intake.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { upsertTenant } from '../../store/tenants.js';
import { AesGcmPayloadCodec, dataConverterOf, parsePayloadCodecKeys } from '../../lib/payload-codec.js';
import { uid, type BenchStack } from './stack.js';
import { alternate, row, spread, type BenchRow } from './stats.js';
import { runSummarize } from './throughput.js';

type Side = 'plain' | 'codec';
const SIDES: Side[] = ['plain', 'codec'];

export async function measureCodec(stack: BenchStack): Promise<BenchRow[]> {
  const n = stack.quick ? 20 : 200;
  const repeats = stack.quick ? 2 : 4;
  const keys = `bench=${randomBytes(32).toString('base64')}`;
  const codec = new AesGcmPayloadCodec(parsePayloadCodecKeys(keys));
  const queues: Record<Side, string> = { plain: `bench-codec-plain-${uid()}`, codec: `bench-codec-on-${uid()}` };
  const [plainWorker, codecWorker] = await Promise.all([
    stack.startWorkerChild('product', queues.plain),
    stack.startWorkerChild('product', queues.codec, { payloadCodecKeys: keys }),
  ]);
  const codecClient = new Client({
    connection: stack.temporal.connection,
    namespace: stack.temporal.options.namespace,
    ...dataConverterOf(codec),
  });
  const clients = {
    plain: stack.jobsClient(queues.plain),
    codec: createJobsClient({ jobs: defaultJobRegistry, pool: stack.pool, temporal: codecClient, taskQueue: queues.codec }),
  };
  const rates: Record<Side, number[]> = { plain: [], codec: [] };
  try {
    const once = async (side: Side, tag: string, count: number) => {
      const tenant = `bench-codec-${side}-${tag}-${uid()}`;
      await upsertTenant(stack.pool, tenant, `key-${tenant}`);
      return (await runSummarize(stack, clients[side], tenant, count)).perSec;
    };
    for (const side of SIDES) await once(side, 'warm', Math.min(5, n));
    for (let r = 0; r < repeats; r++) {
      for (const side of alternate(SIDES, r)) rates[side].push(await once(side, String(r), n));
      stack.log(`  codec repeat ${r + 1}/${repeats}: plain ${rates.plain.at(-1)!.toFixed(1)}/s, codec ${rates.codec.at(-1)!.toFixed(1)}/s`);
    }
  } finally {
    await Promise.all([clients.plain.close(), clients.codec.close()]);
    await Promise.all([plainWorker.stop(), codecWorker.stop()]);
  }

  // The codec alone: one 1 KiB JSON payload (about a summarize step's output) encrypted and decrypted.
  const payload = { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from(JSON.stringify({ summary: 'x'.repeat(1000) })) };
  const rounds = stack.quick ? 2_000 : 20_000;
  const micros: number[] = [];
  for (let r = 0; r < 5; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < rounds; i++) await codec.decode(await codec.encode([payload]));
    micros.push(Number(process.hrtime.bigint() - t0) / 1e3 / rounds);
  }
  return [
    row({
      id: 'codec.summarize',
      section: 'payload codec',
      figure: `summarize jobs end to end with the AES-256-GCM payload codec (N=${n}, ${repeats} repeats)`,
      unit: 'jobs/s',
      value: spread(rates.codec),
      baseline: { label: 'the same jobs without the codec, same run', unit: 'jobs/s', value: spread(rates.plain) },
      sense: 'higher-better',
      paired: true,
      notes: 'PAYLOAD_CODEC_KEYS on the worker and the intake client; each side its own worker process; sides alternate AB/BA',
    }),
    row({
      id: 'codec.round-trip',
      section: 'payload codec',
      figure: 'encode + decode of one 1 KiB payload (this process, no I/O)',
      unit: 'µs',
      value: spread(micros),
      baseline: null,
      sense: 'info',
      notes: `${rounds} round trips per sample, 5 samples`,
    }),
  ];
}
