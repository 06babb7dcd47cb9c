/**
 * The payload converter of session workers (`dataConverter.payloadConverterPath`, bundled into the workflow code):
 * Temporal's default converter, except that a payload it cannot decode — invalid JSON, an unknown encoding — becomes
 * an `UndecodablePayload` value naming why, instead of an error. Without this, one signal whose payload is not JSON
 * fails every workflow task of its session for good: the SDK decodes a signal's arguments before any handler runs.
 * The session refuses such a value like any other bad input (rule 5); what sends a value keeps failing loudly.
 * Deterministic and free of Node built-ins: it runs inside the workflow sandbox.
 */
import { defaultPayloadConverter, type Payload, type PayloadConverter } from '@temporalio/common';
import type { UndecodablePayload } from '../domain/wire';

const textDecoder = new TextDecoder();

function encodingOf(payload: Payload): string {
  const encoding = payload.metadata?.['encoding'];
  return encoding ? textDecoder.decode(encoding) : '(none)';
}

class TolerantPayloadConverter implements PayloadConverter {
  toPayload<T>(value: T): Payload {
    return defaultPayloadConverter.toPayload(value);
  }

  fromPayload<T>(payload: Payload): T {
    try {
      return defaultPayloadConverter.fromPayload<T>(payload);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      const undecodable: UndecodablePayload = {
        $undecodablePayload: `payload with encoding ${encodingOf(payload)} cannot be decoded: ${why}`,
      };
      return undecodable as T;
    }
  }
}

export const payloadConverter: PayloadConverter = new TolerantPayloadConverter();
