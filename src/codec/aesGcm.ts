/**
 * The encrypting payload codec: AES-256-GCM over each whole payload (its metadata and data, protobuf-encoded), so
 * Temporal's history holds only ciphertext. Encrypted payloads carry `encoding: binary/encrypted` and the id of the
 * key that encrypted them (`encryption-key-id`, the layout Temporal's encryption samples use), so keys rotate:
 * the keyring's current key encrypts, any configured key decrypts what it encrypted. Data is
 * nonce (12 random bytes) ‖ ciphertext ‖ tag (16 bytes); the key id is authenticated as associated data.
 *
 * Deterministic about what it is given: `encode` leaves a payload that is already encrypted as it is (no double
 * encryption), `decode` leaves a payload that is not encrypted as it is (history written before encryption was
 * turned on stays readable). Runs outside the workflow sandbox (the worker, the client, the codec server).
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { METADATA_ENCODING_KEY, ValueError, type Payload, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { keyringById, type EncryptionKeyring } from './keys';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const KEY_ID_METADATA_KEY = 'encryption-key-id';

const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const ProtoPayload = temporal.api.common.v1.Payload;
const utf8 = (text: string) => new Uint8Array(Buffer.from(text, 'utf8'));
const text = (bytes: Uint8Array | null | undefined) => (bytes ? Buffer.from(bytes).toString('utf8') : '');

/** A payload that names a key this codec does not have (its message names the key id). */
export class UnknownEncryptionKeyError extends ValueError {
  override name = 'UnknownEncryptionKeyError';
  constructor(readonly keyId: string) {
    super(
      `payload encrypted with key "${keyId}", which is not configured: add it to the previous keys (AGENT_SESSIONS_ENCRYPTION_OLD_KEYS)`,
    );
  }
}

/** Whether a payload is one this codec encrypted (by its `encoding` metadata). */
export function isEncryptedPayload(payload: Payload): boolean {
  return text(payload.metadata?.[METADATA_ENCODING_KEY]) === ENCRYPTED_ENCODING;
}

/**
 * The ids of the keys that encrypted the payloads found anywhere in `value` (a history, or any part of one), sorted;
 * `(none)` for an encrypted payload without a key id. Empty when nothing in it is encrypted.
 */
export function encryptionKeyIdsIn(value: unknown): string[] {
  const ids = new Set<string>();
  const seen = new Set<object>();
  const walk = (v: unknown): void => {
    if (!v || typeof v !== 'object' || ArrayBuffer.isView(v) || seen.has(v)) return;
    seen.add(v);
    if (Array.isArray(v)) return v.forEach(walk);
    const metadata = (v as { metadata?: unknown }).metadata;
    if (metadata && typeof metadata === 'object' && isEncryptedPayload(v as Payload))
      ids.add(text((metadata as Record<string, Uint8Array>)[KEY_ID_METADATA_KEY]) || '(none)');
    Object.values(v).forEach(walk);
  };
  walk(value);
  return [...ids].sort();
}

export class AesGcmCodec implements PayloadCodec {
  private readonly keys: Map<string, Uint8Array>;
  /** The id of the key that encrypts. */
  readonly currentKeyId: string;

  /** Throws an Error naming the key id when a key is malformed or an id is given twice. */
  constructor(keyring: EncryptionKeyring) {
    this.keys = keyringById(keyring);
    this.currentKeyId = keyring.current.id;
  }

  /** Ids of every key that decrypts, the current one first. */
  get keyIds(): string[] {
    return [...this.keys.keys()];
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => (isEncryptedPayload(p) ? p : this.encrypt(p)));
  }

  /** Throws UnknownEncryptionKeyError for a key id it does not have, ValueError for a payload that does not decrypt. */
  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => (isEncryptedPayload(p) ? this.decrypt(p) : p));
  }

  private encrypt(payload: Payload): Payload {
    const keyId = this.currentKeyId;
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(keyId)!, nonce);
    cipher.setAAD(utf8(keyId));
    const plain = ProtoPayload.encode(payload).finish();
    const data = Buffer.concat([nonce, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
    return {
      metadata: { [METADATA_ENCODING_KEY]: utf8(ENCRYPTED_ENCODING), [KEY_ID_METADATA_KEY]: utf8(keyId) },
      data: new Uint8Array(data),
    };
  }

  private decrypt(payload: Payload): Payload {
    const keyId = text(payload.metadata?.[KEY_ID_METADATA_KEY]);
    if (!keyId)
      throw new ValueError(`encrypted payload without an ${KEY_ID_METADATA_KEY}: cannot decrypt it`);
    const key = this.keys.get(keyId);
    if (!key) throw new UnknownEncryptionKeyError(keyId);
    const data = payload.data ?? new Uint8Array();
    if (data.length < NONCE_BYTES + TAG_BYTES)
      throw new ValueError(`payload encrypted with key "${keyId}" is truncated (${data.length} bytes)`);
    const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, NONCE_BYTES));
    decipher.setAAD(utf8(keyId));
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    let plain: Buffer;
    try {
      plain = Buffer.concat([
        decipher.update(data.subarray(NONCE_BYTES, data.length - TAG_BYTES)),
        decipher.final(),
      ]);
    } catch {
      throw new ValueError(
        `payload encrypted with key "${keyId}" does not decrypt: the configured key "${keyId}" is not the one that encrypted it, or the payload was altered`,
      );
    }
    const decoded = ProtoPayload.decode(plain);
    return { metadata: decoded.metadata ?? {}, data: decoded.data ?? new Uint8Array() };
  }
}
