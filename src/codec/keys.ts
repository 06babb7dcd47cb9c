/**
 * Encryption keys of the payload codec: their form, how they are written in the environment, and the keyring that
 * rotates them (one current key encrypts; it and every previous key decrypt, chosen by the id a payload carries).
 * Pure: no Temporal package and no I/O, so the light configuration module (src/worker/config.ts) can validate keys
 * without loading the codec. Keys come from worker and client configuration only, never from session input.
 */
import { z } from 'zod';

/** Key length of AES-256, in bytes. */
export const KEY_BYTES = 32;

/** A key id: what a payload's metadata names, so the key that encrypted it can be found again. */
const KEY_ID = /^[A-Za-z0-9_.-]{1,64}$/;

export interface EncryptionKey {
  /** 1–64 letters, digits and `_ . -`; stored in every payload it encrypts (never the key itself). */
  id: string;
  /** 32 bytes (AES-256). */
  key: Uint8Array;
}

export interface EncryptionKeyring {
  /** Encrypts every new payload, and decrypts the payloads it encrypted. */
  current: EncryptionKey;
  /** Earlier keys, for decrypting what they encrypted (rotation); they never encrypt. */
  previous?: EncryptionKey[];
}

/** How a key is written in the environment, for error messages. */
export const KEY_FORM =
  'expected KEY_ID:BASE64 — an id of 1–64 letters, digits and _ . -, a colon, and a 32-byte key in base64 (e.g. `k1:$(openssl rand -base64 32)`)';

/** `KEY_ID:BASE64` → an EncryptionKey; the issue says the expected form (the caller names the variable). */
export const KeySpecSchema = z.string().transform((text, ctx): EncryptionKey => {
  const at = text.indexOf(':');
  const id = at < 0 ? '' : text.slice(0, at).trim();
  const encoded = at < 0 ? '' : text.slice(at + 1).trim();
  const problem = !KEY_ID.test(id)
    ? `${at < 0 ? 'no key id' : `bad key id "${id.slice(0, 70)}"`}: ${KEY_FORM}`
    : keyProblem(encoded);
  if (problem) {
    ctx.addIssue({ code: 'custom', message: problem });
    return z.NEVER;
  }
  return { id, key: new Uint8Array(Buffer.from(encoded, 'base64')) };
});

/** Why `encoded` is not a base64 32-byte key (undefined when it is). */
function keyProblem(encoded: string): string | undefined {
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(encoded)) return `the key is not base64: ${KEY_FORM}`;
  const bytes = Buffer.from(encoded, 'base64').length;
  return bytes === KEY_BYTES
    ? undefined
    : `the key is ${bytes} bytes, AES-256 needs ${KEY_BYTES}: ${KEY_FORM}`;
}

/**
 * The keyring as configured: `current` (`KEY_ID:BASE64`) and `previous` (a list of the same). Issues are on the path
 * `current` or `previous[i]`; previous keys without a current key, and an id given twice, are refused.
 */
export const KeyringSchema = z
  .object({ current: KeySpecSchema.optional(), previous: z.array(KeySpecSchema).default([]) })
  .superRefine((k, ctx) => {
    if (!k.current && k.previous.length > 0)
      ctx.addIssue({
        code: 'custom',
        path: ['previous'],
        message: 'previous keys only decrypt: configure the current key (AGENT_SESSIONS_ENCRYPTION_KEY) too',
      });
    const seen = new Set<string>();
    for (const [i, key] of [k.current, ...k.previous].entries()) {
      if (!key) continue;
      if (seen.has(key.id))
        ctx.addIssue({
          code: 'custom',
          path: i === 0 ? ['current'] : ['previous', i - 1],
          message: `key id "${key.id}" is given twice: every key needs its own id`,
        });
      seen.add(key.id);
    }
  })
  .transform((k): EncryptionKeyring | undefined =>
    k.current ? { current: k.current, previous: k.previous } : undefined,
  );

/**
 * Checks a keyring given in code (ids, key lengths, no id twice). Throws an Error naming the key id at fault.
 * Returns the keys by id, the current one first.
 */
export function keyringById(ring: EncryptionKeyring): Map<string, Uint8Array> {
  if (!ring?.current) throw new Error('an encryption keyring needs a current key (the one that encrypts)');
  const byId = new Map<string, Uint8Array>();
  for (const k of [ring.current, ...(ring.previous ?? [])]) {
    if (!k || typeof k.id !== 'string' || !KEY_ID.test(k.id))
      throw new Error(`invalid encryption key id "${String(k?.id)}": 1–64 letters, digits and _ . -`);
    if (!(k.key instanceof Uint8Array) || k.key.length !== KEY_BYTES)
      throw new Error(
        `invalid encryption key "${k.id}": ${KEY_BYTES} bytes expected (AES-256), got ${k.key instanceof Uint8Array ? k.key.length : typeof k.key}`,
      );
    if (byId.has(k.id)) throw new Error(`encryption key id "${k.id}" is given twice`);
    byId.set(k.id, k.key);
  }
  return byId;
}

/** A key from its `KEY_ID:BASE64` text (programmatic use). Throws an Error saying the expected form. */
export function parseEncryptionKey(text: string): EncryptionKey {
  const parsed = KeySpecSchema.safeParse(text);
  if (!parsed.success) throw new Error(`invalid encryption key: ${parsed.error.issues[0]?.message}`);
  return parsed.data;
}
