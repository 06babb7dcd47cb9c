/**
 * Encrypted history (optional): the AES-256-GCM payload codec that the client, the worker and the CLI use when a
 * key is configured, its keyring, and the remote codec server for the Temporal UI. Keys come from configuration
 * (`AGENT_SESSIONS_ENCRYPTION_KEY`, `AGENT_SESSIONS_ENCRYPTION_OLD_KEYS`, or a keyring in code), never from session
 * input. Not deterministic (crypto, I/O): never imported by workflow code.
 */
import type { DataConverter } from '@temporalio/common';
import { AesGcmCodec } from './aesGcm';
import type { EncryptionKeyring } from './keys';

export {
  AesGcmCodec,
  UnknownEncryptionKeyError,
  isEncryptedPayload,
  encryptionKeyIdsIn,
  ENCRYPTED_ENCODING,
  KEY_ID_METADATA_KEY,
} from './aesGcm';
export { parseEncryptionKey, KEY_BYTES, type EncryptionKey, type EncryptionKeyring } from './keys';
export { createCodecServer, codecRequestHandler, CODEC_LIMITS, type CodecServerOptions } from './server';

/**
 * The data converter of an encrypting client or worker: Temporal's default payload converter (JSON) with the
 * AES-256-GCM codec over it. Throws an Error naming the key id when the keyring is malformed.
 */
export function encryptionDataConverter(keyring: EncryptionKeyring): DataConverter {
  return { payloadCodecs: [new AesGcmCodec(keyring)] };
}
