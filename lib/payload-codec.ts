/**
 * End-to-end encryption of what the product puts in Temporal (security review F6): a Temporal
 * `PayloadCodec` with AES-256-GCM that the API's client and every worker's data converter run,
 * so a job's step outputs, results and signals (a transcript, an e-mail address) are ciphertext
 * in Temporal's history, its Web UI, the CLI and archival: only processes holding a key read
 * them. Search attributes are not payloads and stay readable (tenant, type, state).
 *
 * Keys come from `PAYLOAD_CODEC_KEYS` (`id=<base64 of 32 bytes>`, comma-separated, newest
 * first) or the file `PAYLOAD_CODEC_KEYS_FILE` names. The first key encrypts; a payload is
 * decrypted with the key its metadata names, so a rotation is: put the new key first, keep
 * the old ones listed while histories encrypted with them are still read. No keys: no codec.
 *
 * An encrypted payload is the whole original payload (metadata and data, protobuf-encoded)
 * under AES-256-GCM: `data = iv (12 bytes) | ciphertext | tag (16 bytes)`, metadata
 * `encoding: binary/encrypted` and `encryption-key-id: <id>` (the layout of Temporal's
 * encryption samples, so their tools read it), with the key ID as additional authenticated
 * data. A payload without that encoding passes through decode untouched: histories recorded
 * before the codec was turned on still replay and still read.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Payload, PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';
import { ConfigError } from './errors.js';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const KEY_ID_METADATA = 'encryption-key-id';
export const CODEC_KEYS_ENV = 'PAYLOAD_CODEC_KEYS';
export const CODEC_KEYS_FILE_ENV = 'PAYLOAD_CODEC_KEYS_FILE';

const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;
const ProtoPayload = proto.temporal.api.common.v1.Payload;

export interface PayloadCodecKey {
  /** Named in each payload it encrypts (`encryption-key-id`): 1-64 of A-Z a-z 0-9 . _ - */
  readonly id: string;
  /** 32 bytes (AES-256). */
  readonly key: Buffer;
}

const LABEL = '[payload codec keys]';

/** `id=<base64 of 32 bytes>,...`: newest first. A bad entry is a ConfigError naming the variable and the entry's ID, never a key. */
export function parsePayloadCodecKeys(raw: string, from: string = CODEC_KEYS_ENV): PayloadCodecKey[] {
  const keys: PayloadCodecKey[] = [];
  for (const entry of raw
    .split(/[,\n]/)
    .map((e) => e.trim())
    .filter((e) => e !== '')) {
    const eq = entry.indexOf('=');
    const id = entry.slice(0, eq).trim();
    // No "id=" (a bare base64 key ends in "="): the generic message, never the would-be ID (key material).
    if (eq <= 0 || entry.slice(eq + 1).trim() === '' || !KEY_ID.test(id))
      throw new ConfigError(`${from} must be "id=<base64 of 32 bytes>,..." with key IDs of 1-64 of A-Z a-z 0-9 . _ - (newest first)`);
    const key = Buffer.from(entry.slice(eq + 1).trim(), 'base64');
    if (key.length !== 32)
      throw new ConfigError(`${from}: key "${id}" must be 32 bytes, base64-encoded (generate one: openssl rand -base64 32)`);
    if (keys.some((k) => k.id === id)) throw new ConfigError(`${from}: key ID "${id}" is listed twice`);
    keys.push({ id, key });
  }
  // Printed or serialised (a config dump), the list is a label, never key material.
  Object.defineProperties(keys, {
    toJSON: { value: () => LABEL },
    [Symbol.for('nodejs.util.inspect.custom')]: { value: () => LABEL },
  });
  return keys;
}

/** The configured keys (`lib/config.ts`): the variable wins, else the file's content; none: `[]` (no codec). */
export function payloadCodecKeysFrom(value: string | undefined, file: string | undefined): PayloadCodecKey[] {
  if (value !== undefined && value.trim() !== '') return parsePayloadCodecKeys(value, CODEC_KEYS_ENV);
  if (file === undefined || file === '') return [];
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`${CODEC_KEYS_FILE_ENV}: cannot read the file it names (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  return parsePayloadCodecKeys(text, CODEC_KEYS_FILE_ENV);
}

const utf8 = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array | null | undefined) => (b ? Buffer.from(b).toString('utf8') : undefined);

/** Encrypts with the first key, decrypts with the key a payload names; passes through what it did not encrypt. */
export class AesGcmPayloadCodec implements PayloadCodec {
  private readonly byId: ReadonlyMap<string, Buffer>;
  private readonly encryptWith: PayloadCodecKey;

  constructor(keys: readonly PayloadCodecKey[]) {
    if (keys.length === 0) throw new Error('AesGcmPayloadCodec needs at least one key');
    this.encryptWith = keys[0]!;
    this.byId = new Map(keys.map((k) => [k.id, k.key]));
  }

  /** The key new payloads are encrypted with. */
  get keyId(): string {
    return this.encryptWith.id;
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    const { id, key } = this.encryptWith;
    return payloads.map((p) => {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(id, 'utf8'));
      const body = Buffer.concat([cipher.update(ProtoPayload.encode(p).finish()), cipher.final()]);
      return {
        metadata: { encoding: utf8(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: utf8(id) },
        data: Buffer.concat([iv, body, cipher.getAuthTag()]),
      };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => {
      if (text(p.metadata?.encoding) !== ENCRYPTED_ENCODING) return p; // not ours: recorded before the codec, or plain
      const id = text(p.metadata?.[KEY_ID_METADATA]);
      const key = id === undefined ? undefined : this.byId.get(id);
      // Thrown, the workflow task or the read fails and is retried: listing the key again heals it.
      if (!key) throw new Error(`payload encrypted with key "${id ?? '?'}", which ${CODEC_KEYS_ENV} does not list`);
      const data = Buffer.from(p.data ?? new Uint8Array());
      if (data.length < IV_BYTES + TAG_BYTES) throw new Error('encrypted payload too short');
      const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(id!, 'utf8'));
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      const plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
      return ProtoPayload.decode(plain) as Payload;
    });
  }
}

/** The codec for the configured keys; undefined when none are (encryption off). */
export function createPayloadCodec(keys: readonly PayloadCodecKey[]): AesGcmPayloadCodec | undefined {
  return keys.length === 0 ? undefined : new AesGcmPayloadCodec(keys);
}

/** A Temporal `DataConverter` option with the codec, or nothing: `new Client({ ..., ...dataConverterOf(codec) })`. */
export function dataConverterOf(codec: PayloadCodec | undefined): { dataConverter?: { payloadCodecs: PayloadCodec[] } } {
  return codec ? { dataConverter: { payloadCodecs: [codec] } } : {};
}

type PayloadList = { payloads?: Payload[] | null } | null | undefined;
interface HistoryLike {
  events?: Array<{
    activityTaskCompletedEventAttributes?: { result?: PayloadList } | null;
    markerRecordedEventAttributes?: { details?: Record<string, PayloadList> | null } | null;
  }> | null;
}

/**
 * Decodes, in place, the payloads of a fetched history that the product reads back itself (the
 * timeline: activity results, local-activity markers) with a client's codecs, last first as
 * the SDK does. Without codecs nothing changes. A payload no listed key opens stays as it was.
 */
export async function decodeHistoryPayloads(history: HistoryLike, codecs: readonly PayloadCodec[]): Promise<void> {
  if (codecs.length === 0) return;
  const lists: Array<{ payloads?: Payload[] | null }> = [];
  for (const e of history.events ?? []) {
    if (e.activityTaskCompletedEventAttributes?.result) lists.push(e.activityTaskCompletedEventAttributes.result);
    for (const d of Object.values(e.markerRecordedEventAttributes?.details ?? {})) if (d) lists.push(d);
  }
  for (const list of lists) {
    let payloads = list.payloads ?? [];
    try {
      for (const codec of [...codecs].reverse()) payloads = await codec.decode(payloads);
      list.payloads = payloads;
    } catch {
      // Left encrypted: the timeline shows the event without its detail.
    }
  }
}
