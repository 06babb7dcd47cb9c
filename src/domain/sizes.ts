/**
 * Sizes at the activity edge (docs/protocol.md, "Sizes"): Temporal refuses any payload over its limit (2 MiB by
 * default), and an activity result it refuses is never recorded, so the attempt is retried and the turn never ends.
 * Every result an activity returns is held under the limit here: a model answer is cut at `maxAnswerBytes` (the
 * stream stops there) and fails with `ModelAnswerTooLarge`; a tool result over `maxToolResultBytes` becomes a
 * `TOOL_RESULT_TOO_LARGE` error the model reads. Sizes are UTF-8 bytes of the JSON a payload converter writes.
 * Pure.
 */

/** Temporal's default payload size limit (the server's `limit.blobSize.error`). */
export const PAYLOAD_LIMIT_BYTES = 2 * 1024 * 1024;

/** Default cap on one model answer: the UTF-8 bytes of its text and its tool calls' arguments together. */
export const DEFAULT_MAX_ANSWER_BYTES = 1024 * 1024;

/**
 * Default cap on one tool result as the activity returns it (its JSON): room for the 1 MiB of binary content a
 * result may carry (1.33 MiB as base64) and some text.
 */
export const DEFAULT_MAX_TOOL_RESULT_BYTES = 1536 * 1024;

/**
 * Largest cap a worker may set for either: what leaves room under the payload limit for the rest of the result and
 * the payload's own encoding.
 */
export const MAX_RESULT_CAP_BYTES = PAYLOAD_LIMIT_BYTES - 128 * 1024;

/**
 * UTF-8 bytes of a string, counted without encoding it (no TextEncoder: this runs in the workflow sandbox too). A
 * lone surrogate counts 3 bytes, as its replacement character is encoded.
 */
export function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && isLowSurrogate(text.charCodeAt(i + 1))) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

function isLowSurrogate(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff;
}

/** UTF-8 bytes of `value` as JSON (what the default payload converter stores). */
export function jsonBytes(value: unknown): number {
  return utf8Bytes(JSON.stringify(value) ?? '');
}
