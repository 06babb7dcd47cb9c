/**
 * The encryption codec without a server: AES-256-GCM round trips, the key id in the metadata and rotation, the
 * errors that name a key id, what it does with payloads already encrypted or never encrypted, and the configuration
 * of keys (environment variables validated with errors naming the variable and the expected form).
 */
import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter, METADATA_ENCODING_KEY, type Payload } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import {
  AesGcmCodec,
  ENCRYPTED_ENCODING,
  KEY_ID_METADATA_KEY,
  parseEncryptionKey,
  UnknownEncryptionKeyError,
  type EncryptionKey,
} from '../../src/codec';
import { loadConfig } from '../../src/worker/config';

const key = (id: string): EncryptionKey => ({ id, key: new Uint8Array(randomBytes(32)) });
const spec = (k: EncryptionKey) => `${k.id}:${Buffer.from(k.key).toString('base64')}`;
const text = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? []).toString('utf8');
const SECRET = 'the launch code is 0000';

function plainPayload(value: unknown = { prompt: SECRET }): Payload {
  return defaultPayloadConverter.toPayload(value)!;
}

describe('AesGcmCodec', () => {
  const k1 = key('k1');
  const k2 = key('k2');

  it('encrypts the whole payload (metadata and data) and decrypts it back', async () => {
    const codec = new AesGcmCodec({ current: k1 });
    const original = plainPayload();
    const [encrypted] = await codec.encode([original]);
    expect(text(encrypted!.metadata![METADATA_ENCODING_KEY])).toBe(ENCRYPTED_ENCODING);
    expect(text(encrypted!.metadata![KEY_ID_METADATA_KEY])).toBe('k1');
    expect(Object.keys(encrypted!.metadata!).sort()).toEqual(
      [KEY_ID_METADATA_KEY, METADATA_ENCODING_KEY].sort(),
    );
    // Neither the value nor its original encoding is visible.
    expect(Buffer.from(encrypted!.data!).includes(SECRET)).toBe(false);
    expect(Buffer.from(encrypted!.data!).includes('json/plain')).toBe(false);
    const [decoded] = await codec.decode([encrypted!]);
    expect(defaultPayloadConverter.fromPayload(decoded!)).toEqual({ prompt: SECRET });
    expect(text(decoded!.metadata![METADATA_ENCODING_KEY])).toBe('json/plain');
  });

  it('uses a fresh nonce for every payload', async () => {
    const codec = new AesGcmCodec({ current: k1 });
    const [a, b] = await codec.encode([plainPayload(), plainPayload()]);
    expect(Buffer.from(a!.data!).equals(Buffer.from(b!.data!))).toBe(false);
  });

  it('rotates: the current key encrypts, a previous key still decrypts what it encrypted', async () => {
    const before = new AesGcmCodec({ current: k1 });
    const after = new AesGcmCodec({ current: k2, previous: [k1] });
    const [old] = await before.encode([plainPayload('old')]);
    const [fresh] = await after.encode([plainPayload('new')]);
    expect(text(fresh!.metadata![KEY_ID_METADATA_KEY])).toBe('k2');
    const decoded = await after.decode([old!, fresh!]);
    expect(decoded.map((p) => defaultPayloadConverter.fromPayload(p))).toEqual(['old', 'new']);
    expect(after.keyIds).toEqual(['k2', 'k1']);
  });

  it('names the key id of a payload whose key is not configured', async () => {
    const [old] = await new AesGcmCodec({ current: k1 }).encode([plainPayload()]);
    const without = new AesGcmCodec({ current: k2 });
    const failure = await without.decode([old!]).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(UnknownEncryptionKeyError);
    expect((failure as Error).message).toMatch(/key "k1", which is not configured/);
    expect((failure as Error).message).toMatch(/AGENT_SESSIONS_ENCRYPTION_OLD_KEYS/);
  });

  it('refuses a payload encrypted by another key of the same id, or altered, naming the key id', async () => {
    const [encrypted] = await new AesGcmCodec({ current: k1 }).encode([plainPayload()]);
    const impostor = new AesGcmCodec({ current: key('k1') });
    await expect(impostor.decode([encrypted!])).rejects.toThrow(/key "k1" does not decrypt/);
    const altered = Buffer.from(encrypted!.data!);
    altered[20] = altered[20]! ^ 1;
    const codec = new AesGcmCodec({ current: k1 });
    await expect(codec.decode([{ ...encrypted!, data: new Uint8Array(altered) }])).rejects.toThrow(
      /key "k1" does not decrypt/,
    );
    // The key id is authenticated: relabelling a payload with another configured key's id fails too.
    const both = new AesGcmCodec({ current: k2, previous: [k1] });
    const relabelled = {
      metadata: { ...encrypted!.metadata, [KEY_ID_METADATA_KEY]: new Uint8Array(Buffer.from('k2')) },
      data: encrypted!.data!,
    };
    await expect(both.decode([relabelled])).rejects.toThrow(/key "k2" does not decrypt/);
    await expect(codec.decode([{ ...encrypted!, data: new Uint8Array(10) }])).rejects.toThrow(/truncated/);
  });

  it('leaves payloads that are already encrypted (encode) or not encrypted (decode) as they are', async () => {
    const codec = new AesGcmCodec({ current: k2, previous: [k1] });
    const [byK1] = await new AesGcmCodec({ current: k1 }).encode([plainPayload()]);
    const [again] = await codec.encode([byK1!]);
    expect(again).toBe(byK1); // not encrypted twice, not re-keyed
    const plain = plainPayload();
    const [decoded] = await codec.decode([plain]);
    expect(decoded).toBe(plain);
    expect(await codec.encode([])).toEqual([]);
  });

  it('refuses a malformed keyring, naming the key id', () => {
    expect(() => new AesGcmCodec({ current: { id: 'short', key: new Uint8Array(16) } })).toThrow(
      /key "short": 32 bytes expected/,
    );
    expect(() => new AesGcmCodec({ current: k1, previous: [k1] })).toThrow(/"k1" is given twice/);
    expect(() => new AesGcmCodec({ current: { id: 'bad id', key: k1.key } })).toThrow(/key id "bad id"/);
    expect(parseEncryptionKey(spec(k1))).toEqual(k1);
    expect(() => parseEncryptionKey('k1:abcd')).toThrow(/3 bytes, AES-256 needs 32/);
  });
});

describe('encryption keys from the environment', () => {
  const k1 = key('k1');
  const k2 = key('k2');

  it('reads the current key and the previous keys', () => {
    expect(loadConfig({}).encryption).toBeUndefined();
    const config = loadConfig({
      AGENT_SESSIONS_ENCRYPTION_KEY: spec(k2),
      AGENT_SESSIONS_ENCRYPTION_OLD_KEYS: ` ${spec(k1)} , `,
    });
    expect(config.encryption).toEqual({ current: k2, previous: [k1] });
    // url-safe base64 is accepted too
    const urlSafe = Buffer.from(k1.key).toString('base64url');
    expect(loadConfig({ AGENT_SESSIONS_ENCRYPTION_KEY: `k1:${urlSafe}` }).encryption?.current).toEqual(k1);
  });

  it.each([
    [
      'AGENT_SESSIONS_ENCRYPTION_KEY',
      'no-colon-here',
      /AGENT_SESSIONS_ENCRYPTION_KEY: no key id: expected KEY_ID:BASE64/,
    ],
    [
      'AGENT_SESSIONS_ENCRYPTION_KEY',
      'k1:not base64!',
      /AGENT_SESSIONS_ENCRYPTION_KEY: the key is not base64/,
    ],
    [
      'AGENT_SESSIONS_ENCRYPTION_KEY',
      `k1:${Buffer.alloc(16).toString('base64')}`,
      /AGENT_SESSIONS_ENCRYPTION_KEY: the key is 16 bytes, AES-256 needs 32: expected KEY_ID:BASE64/,
    ],
    ['AGENT_SESSIONS_ENCRYPTION_KEY', `bad id:${Buffer.alloc(32).toString('base64')}`, /bad key id "bad id"/],
  ])('refuses %s=%s naming the variable and the expected form', (name, value, pattern) => {
    expect(() => loadConfig({ [name]: value })).toThrow(pattern);
    expect(() => loadConfig({ [name]: value })).toThrow(
      /^invalid configuration: AGENT_SESSIONS_ENCRYPTION_KEY: /,
    );
  });

  it('refuses bad previous keys, previous keys alone, and an id given twice', () => {
    expect(() =>
      loadConfig({
        AGENT_SESSIONS_ENCRYPTION_KEY: spec(k2),
        AGENT_SESSIONS_ENCRYPTION_OLD_KEYS: `${spec(k1)},k0:xx`,
      }),
    ).toThrow(/^invalid configuration: AGENT_SESSIONS_ENCRYPTION_OLD_KEYS: the key is 1 bytes/);
    expect(() => loadConfig({ AGENT_SESSIONS_ENCRYPTION_OLD_KEYS: spec(k1) })).toThrow(
      /^invalid configuration: AGENT_SESSIONS_ENCRYPTION_OLD_KEYS: previous keys only decrypt: configure the current key \(AGENT_SESSIONS_ENCRYPTION_KEY\)/,
    );
    expect(() =>
      loadConfig({
        AGENT_SESSIONS_ENCRYPTION_KEY: spec(k1),
        AGENT_SESSIONS_ENCRYPTION_OLD_KEYS: spec({ id: 'k1', key: k2.key }),
      }),
    ).toThrow(/^invalid configuration: AGENT_SESSIONS_ENCRYPTION_OLD_KEYS: key id "k1" is given twice/);
  });
});
