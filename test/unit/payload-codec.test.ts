import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { inspect } from 'node:util';
import type { Payload } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import {
  AesGcmPayloadCodec,
  createPayloadCodec,
  ENCRYPTED_ENCODING,
  KEY_ID_METADATA,
  parsePayloadCodecKeys,
  payloadCodecKeysFrom,
} from '../../lib/payload-codec.js';

const A = { id: 'a', key: randomBytes(32) };
const B = { id: 'b', key: randomBytes(32) };
const plain = (data: string, encoding = 'json/plain'): Payload => ({
  metadata: { encoding: Buffer.from(encoding) },
  data: Buffer.from(data),
});
const str = (b: Uint8Array | null | undefined) => Buffer.from(b ?? new Uint8Array()).toString('utf8');

describe('AES-256-GCM payload codec', () => {
  it('encrypts the whole payload (metadata and data) and decrypts it back', async () => {
    const codec = new AesGcmPayloadCodec([A]);
    const original = plain('{"text":"a transcript of a board meeting"}');
    const [enc] = await codec.encode([original]);
    expect(str(enc!.metadata?.encoding)).toBe(ENCRYPTED_ENCODING);
    expect(str(enc!.metadata?.[KEY_ID_METADATA])).toBe('a');
    expect(Buffer.from(enc!.data!).includes('transcript')).toBe(false);
    expect(Buffer.from(enc!.data!).includes('json/plain')).toBe(false);
    const [dec] = await codec.decode([enc!]);
    expect(str(dec!.data)).toBe('{"text":"a transcript of a board meeting"}');
    expect(str(dec!.metadata?.encoding)).toBe('json/plain');
  });

  it('uses a fresh IV per payload: one plaintext never encrypts alike twice', async () => {
    const codec = new AesGcmPayloadCodec([A]);
    const [x, y] = await codec.encode([plain('"same"'), plain('"same"')]);
    expect(Buffer.from(x!.data!).equals(Buffer.from(y!.data!))).toBe(false);
  });

  it('passes through payloads it did not encrypt (histories recorded before the codec)', async () => {
    const p = plain('"recorded before"');
    expect(await new AesGcmPayloadCodec([A]).decode([p])).toEqual([p]);
  });

  it('rotation: encrypts with the first key, decrypts with any listed one; an unlisted key is an error naming its ID', async () => {
    const [underA] = await new AesGcmPayloadCodec([A]).encode([plain('"old"')]);
    const rotated = new AesGcmPayloadCodec([B, A]);
    expect(str((await rotated.decode([underA!]))[0]!.data)).toBe('"old"');
    expect(str((await rotated.encode([plain('"new"')]))[0]!.metadata?.[KEY_ID_METADATA])).toBe('b');
    await expect(new AesGcmPayloadCodec([B]).decode([underA!])).rejects.toThrow(/"a".*PAYLOAD_CODEC_KEYS/);
  });

  it('refuses a tampered payload or one relabelled with another key ID (authenticated)', async () => {
    const codec = new AesGcmPayloadCodec([A, { id: 'b', key: A.key }]);
    const [enc] = await codec.encode([plain('"x"')]);
    const flipped = Buffer.from(enc!.data!);
    const at = flipped.length - 20;
    flipped.writeUInt8(flipped.readUInt8(at) ^ 1, at);
    await expect(codec.decode([{ ...enc!, data: flipped }])).rejects.toThrow();
    // Same key bytes under another ID: the key ID is authenticated data, so relabelling fails.
    await expect(codec.decode([{ ...enc!, metadata: { ...enc!.metadata, [KEY_ID_METADATA]: Buffer.from('b') } }])).rejects.toThrow();
  });
});

describe('PAYLOAD_CODEC_KEYS', () => {
  const b64 = (k: Buffer) => k.toString('base64');

  it('parses id=<base64 of 32 bytes>, newest first; none configured is no codec', () => {
    const keys = parsePayloadCodecKeys(`new=${b64(B.key)}, old=${b64(A.key)}`);
    expect(keys.map((k) => k.id)).toEqual(['new', 'old']);
    expect(keys[1]!.key.equals(A.key)).toBe(true);
    expect(payloadCodecKeysFrom(undefined, undefined)).toEqual([]);
    expect(createPayloadCodec([])).toBeUndefined();
    expect(createPayloadCodec(keys)?.keyId).toBe('new');
  });

  it('refuses bad entries naming the variable and the key ID, never key material', () => {
    const short = randomBytes(16).toString('base64');
    expect(() => parsePayloadCodecKeys(`k1=${short}`)).toThrow(/PAYLOAD_CODEC_KEYS: key "k1" must be 32 bytes/);
    try {
      parsePayloadCodecKeys(`k1=${short}`);
    } catch (err) {
      expect((err as Error).message).not.toContain(short);
    }
    expect(() => parsePayloadCodecKeys(b64(A.key))).toThrow(/^PAYLOAD_CODEC_KEYS must be "id=<base64 of 32 bytes>/); // a bare key, no ID
    expect(() => parsePayloadCodecKeys(`bad id=${b64(A.key)}`)).toThrow(/^PAYLOAD_CODEC_KEYS must be "id=/);
    expect(() => parsePayloadCodecKeys(`a=${b64(A.key)},a=${b64(B.key)}`)).toThrow(/listed twice/);
  });

  it('reads PAYLOAD_CODEC_KEYS_FILE when the variable is unset, and prints as a label', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'codec-keys-'));
    const file = path.join(dir, 'keys');
    writeFileSync(file, `a=${b64(A.key)}\nb=${b64(B.key)}\n`);
    const keys = payloadCodecKeysFrom(undefined, file);
    expect(keys.map((k) => k.id)).toEqual(['a', 'b']);
    expect(JSON.stringify({ keys })).toBe('{"keys":"[payload codec keys]"}');
    expect(inspect(keys)).toBe('[payload codec keys]');
    expect(() => payloadCodecKeysFrom(undefined, path.join(dir, 'missing'))).toThrow(
      /PAYLOAD_CODEC_KEYS_FILE: cannot read the file it names \(ENOENT\)/,
    );
  });
});
