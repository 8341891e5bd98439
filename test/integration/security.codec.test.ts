import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { Client } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AesGcmPayloadCodec, decodeHistoryPayloads, ENCRYPTED_ENCODING, KEY_ID_METADATA } from '../../lib/payload-codec.js';
import type { RecordedHistory } from '../../scripts/lib/record-histories.js';
import { ADMIN_KEY, startHarness, uid, workflowBundle, type Harness } from '../support/harness.js';

// Security review F6: with PAYLOAD_CODEC_KEYS, what the product puts in Temporal (here a
// transcript, which the review found twice in a transcribe job's history) is ciphertext there;
// jobs still run, an operator reads payloads through the codec endpoint, keys rotate, and
// histories recorded without the codec still replay.
const KEY_A = { id: 'key-a', key: randomBytes(32) };
const KEY_B = { id: 'key-b', key: randomBytes(32) };
const UI_ORIGIN = 'http://127.0.0.1:8233'; // the harness's TEMPORAL_UI_URL

let h: Harness;
beforeAll(async () => {
  h = await startHarness('security-codec', { payloadCodec: new AesGcmPayloadCodec([KEY_A]) });
});
afterAll(async () => {
  await h?.close();
});

type History = proto.temporal.api.history.v1.IHistory;
const text = (b: Uint8Array | null | undefined) => Buffer.from(b ?? new Uint8Array()).toString('utf8');

/** A job's history as whoever reads the namespace sees it (the Web UI, the CLI, archival): a client without the codec. */
async function rawHistory(jobId: string): Promise<History> {
  const plain = new Client({ connection: h.temporal.connection, namespace: h.temporal.options.namespace });
  return plain.workflow.getHandle(jobId).fetchHistory();
}

/** The payloads the product put there: workflow input and result, activity inputs and results, signals. */
function payloadsOf(history: History): Payload[] {
  const out: Payload[] = [];
  for (const e of history.events ?? []) {
    for (const list of [
      e.workflowExecutionStartedEventAttributes?.input,
      e.workflowExecutionCompletedEventAttributes?.result,
      e.activityTaskScheduledEventAttributes?.input,
      e.activityTaskCompletedEventAttributes?.result,
      e.workflowExecutionSignaledEventAttributes?.input,
    ])
      out.push(...((list?.payloads ?? []) as Payload[]));
  }
  return out;
}

const json = (p: Payload) => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
});
const operator = { authorization: `Bearer ${ADMIN_KEY}` };

let marker = '';
let jobId = '';
let encrypted: Payload[] = [];

describe('payload codec (F6)', () => {
  it("keeps a transcribe job's transcript and input out of its Temporal history, and the job still succeeds", async () => {
    marker = `codec-marker-${uid()}`;
    const audioUrl = `https://example.com/${marker}.wav`;
    const r = await h.submit('transcribe', { audioUrl });
    expect(r.status).toBe(202);
    jobId = r.body.jobId;
    const done = await h.waitForStatus(jobId, 'succeeded');
    // Completed by the signed webhook: the API's client signalled the transcript through the codec.
    expect(done.result).toMatchObject({ text: `transcript of ${audioUrl}`, completedVia: 'webhook' });

    const history = await rawHistory(jobId);
    const bytes = Buffer.from(proto.temporal.api.history.v1.History.encode(history).finish());
    expect(bytes.includes(marker)).toBe(false);
    encrypted = payloadsOf(history);
    expect(encrypted.length).toBeGreaterThan(3);
    for (const p of encrypted) {
      expect(text(p.metadata?.encoding)).toBe(ENCRYPTED_ENCODING);
      expect(text(p.metadata?.[KEY_ID_METADATA])).toBe('key-a');
    }
    // The transcript is there, encrypted: the key reads it back (twice, as the review found it in plain).
    const decoded = await new AesGcmPayloadCodec([KEY_A]).decode(encrypted);
    expect(decoded.filter((p) => text(p.data).includes(marker)).length).toBeGreaterThanOrEqual(2);

    // What the timeline reads back (activity results) decodes in place with the client's codecs.
    const results = () =>
      (history.events ?? []).flatMap((e) => (e.activityTaskCompletedEventAttributes?.result?.payloads ?? []) as Payload[]);
    expect(results().length).toBeGreaterThan(0);
    await decodeHistoryPayloads(history, h.temporal.options.loadedDataConverter.payloadCodecs);
    expect(results().every((p) => text(p.metadata?.encoding) !== ENCRYPTED_ENCODING)).toBe(true);
  });

  it('serves /codec/decode and /codec/encode to an operator key only', async () => {
    const decode = (headers: Record<string, string>, body: unknown = { payloads: encrypted.map(json) }) =>
      h.api('/codec/decode', { body, tenant: null, headers });
    const r = await decode(operator);
    expect(r.status).toBe(200);
    expect(r.body.payloads).toHaveLength(encrypted.length);
    const plain = (r.body.payloads as Array<{ data: string; metadata: Record<string, string> }>).map((p) => ({
      data: Buffer.from(p.data, 'base64').toString('utf8'),
      encoding: Buffer.from(p.metadata.encoding ?? '', 'base64').toString('utf8'),
    }));
    expect(plain.some((p) => p.data.includes(marker))).toBe(true);
    expect(plain.every((p) => p.encoding !== ENCRYPTED_ENCODING)).toBe(true);

    expect((await decode({})).status).toBe(401);
    expect((await h.api('/codec/decode', { body: { payloads: encrypted.map(json) } })).status).toBe(401); // a tenant key

    const bad = await decode(operator, { payloads: [{ metadata: {}, data: 'not base64!' }] });
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0].path).toBe('payloads.0.data');

    const original = {
      metadata: { encoding: Buffer.from('json/plain').toString('base64') },
      data: Buffer.from('{"x":1}').toString('base64'),
    };
    const enc = await h.api('/codec/encode', { body: { payloads: [original] }, tenant: null, headers: operator });
    expect(enc.status).toBe(200);
    expect(Buffer.from(enc.body.payloads[0].metadata.encoding, 'base64').toString()).toBe(ENCRYPTED_ENCODING);
    const back = await decode(operator, enc.body);
    expect(back.body.payloads).toEqual([original]);
  });

  it("answers CORS for the Web UI's origin only", async () => {
    const preflight = (origin: string) =>
      fetch(`${h.baseUrl}/codec/decode`, {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization,content-type,x-namespace',
        },
      });
    const ok = await preflight(UI_ORIGIN);
    expect(ok.status).toBe(204);
    expect(ok.headers.get('access-control-allow-origin')).toBe(UI_ORIGIN);
    expect(ok.headers.get('access-control-allow-headers')).toMatch(/Authorization/);
    const evil = await preflight('https://evil.example');
    expect(evil.headers.get('access-control-allow-origin')).toBeNull();
    const call = await h.api('/codec/decode', { body: { payloads: [] }, tenant: null, headers: { ...operator, origin: UI_ORIGIN } });
    expect(call.status).toBe(200);
    expect(call.headers.get('access-control-allow-origin')).toBe(UI_ORIGIN);
  });

  it('rotation: payloads encrypted with key A decode once the keys are [B, A]; new ones are encrypted with B', async () => {
    const rotated = new AesGcmPayloadCodec([KEY_B, KEY_A]);
    const decoded = await rotated.decode(encrypted);
    expect(decoded.some((p) => text(p.data).includes(marker))).toBe(true);
    const [fresh] = await rotated.encode([{ metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('"x"') }]);
    expect(text(fresh!.metadata?.[KEY_ID_METADATA])).toBe('key-b');
    // Key A no longer listed: its payloads cannot be read, and the error names the key, never data.
    await expect(new AesGcmPayloadCodec([KEY_B]).decode(encrypted)).rejects.toThrow(/"key-a"/);
  });

  it('histories recorded without the codec still replay with it on (unencrypted payloads pass through)', async () => {
    // The replay safety net's fixtures (recorded without a codec, on today's workflow code): the
    // older pre-move histories took branches the Worker Versioning change retired (pinned runs
    // finish on their own build), so they no longer replay on this bundle with or without a codec.
    const dir = new URL('../fixtures/histories/', import.meta.url);
    const files = (await readdir(dir)).filter((f) => f.endsWith('.json'));
    expect(files.length).toBeGreaterThan(5);
    const bundle = await workflowBundle();
    for (const f of files) {
      const r = JSON.parse(await readFile(new URL(f, dir), 'utf8')) as RecordedHistory;
      const history = proto.temporal.api.history.v1.History.decode(Buffer.from(r.history, 'base64'));
      await expect(
        Worker.runReplayHistory(
          { workflowBundle: bundle, dataConverter: { payloadCodecs: [new AesGcmPayloadCodec([KEY_A])] } },
          history,
          r.workflowId,
        ),
        f,
      ).resolves.toBeUndefined();
    }
  });
});
