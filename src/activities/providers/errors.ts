/**
 * Turns whatever a provider call throws into a named Temporal failure (STYLE.md 7) that says what to do:
 * 429 → ModelRateLimited and 5xx / 408 / 409 / connection errors → ModelUnavailable, both retryable with
 * `nextRetryDelay` from Retry-After; a timeout → ModelTimeout (retryable); 401 / 403 → ModelAuthFailed naming the
 * worker's key variable, and other 4xx → ModelRequestInvalid, both non-retryable. Whatever the provider said is
 * passed through `maskSecrets` first: a server that echoes the key it received must not put it into history
 * (../secrets.ts). Pure apart from reading the clock for an HTTP-date Retry-After.
 */
import { APICallError } from 'ai';
import { ApplicationFailure } from '@temporalio/common';
import { FailureTypes } from '../../contract';
import { maskSecrets } from '../secrets';

/** How a provider is named in messages: the provider and the worker variables that configure it. */
export interface ProviderLabels {
  provider: string;
  /** Variable holding the key (e.g. OPENAI_API_KEY). */
  keyVar?: string;
  /** Variable holding the base URL (e.g. OPENAI_BASE_URL). */
  baseUrlVar?: string;
  /** What the provider holds that must never appear in a message (its key): masked wherever it shows up. */
  secrets?: readonly string[];
}

/** Longest wait taken from a Retry-After header; longer asks fall back to Temporal's backoff. */
const MAX_RETRY_AFTER_MS = 10 * 60_000;

/** The failure to throw for `err`, raised while calling `model` of `labels.provider`. */
export function modelFailure(err: unknown, labels: ProviderLabels, model: string): ApplicationFailure {
  if (err instanceof ApplicationFailure) return err;
  const who = labels.provider;
  const mask = (text: string) => maskSecrets(text, labels.secrets);
  if (APICallError.isInstance(err)) {
    const status = err.statusCode;
    const detail = providerMessage(err, mask);
    if (status === 401 || status === 403) {
      const key = labels.keyVar ?? `the ${who} key`;
      const fix = status === 401 ? 'check the key' : `check that the key may use model "${model}"`;
      return ApplicationFailure.create({
        type: FailureTypes.ModelAuthFailed,
        nonRetryable: true,
        message: `${key} was rejected (${status}): ${fix}${detail ? ` (${who} said: ${detail})` : ''}`,
      });
    }
    if (status === 429) {
      return retryable(
        FailureTypes.ModelRateLimited,
        `${who} rate-limited the request (429)${detail ? `: ${detail}` : ''}`,
        err,
      );
    }
    if (status !== undefined && (status >= 500 || status === 408 || status === 409)) {
      return retryable(
        FailureTypes.ModelUnavailable,
        `${who} failed (${status})${detail ? `: ${detail}` : ''}`,
        err,
      );
    }
    if (status !== undefined) {
      const hint =
        status === 404
          ? `check the model name "${model}"${labels.baseUrlVar ? ` and ${labels.baseUrlVar}` : ''}`
          : 'the request was refused as invalid';
      return ApplicationFailure.create({
        type: FailureTypes.ModelRequestInvalid,
        nonRetryable: true,
        message: `${who} rejected the request (${status}): ${hint}${detail ? ` (${who} said: ${detail})` : ''}`,
      });
    }
    // No status: the request never got an answer (connection refused or reset, DNS, TLS).
    const where = labels.baseUrlVar ? ` (check ${labels.baseUrlVar})` : '';
    return retryable(
      FailureTypes.ModelUnavailable,
      `cannot reach ${who} at ${mask(err.url)}${where}: ${mask(err.message)}`,
      err,
    );
  }
  if (isTimeout(err))
    return retryable(FailureTypes.ModelTimeout, `${who} did not answer in time: ${mask(messageOf(err))}`);
  // Anything else (a stream cut mid-way, a malformed chunk): retried, and the last message is what the turn shows.
  return retryable(FailureTypes.ModelUnavailable, `${who} call failed: ${mask(messageOf(err))}`);
}

/** A retryable failure; with the provider's Retry-After (seconds, HTTP date or `retry-after-ms`) as the delay. */
function retryable(type: string, message: string, err?: APICallError): ApplicationFailure {
  const delay = err ? retryAfterMs(err.responseHeaders) : undefined;
  return ApplicationFailure.create({
    type,
    message,
    nonRetryable: false,
    ...(delay !== undefined ? { nextRetryDelay: delay } : {}),
  });
}

/** Milliseconds the provider asked us to wait, when it did and the ask is sane. */
export function retryAfterMs(
  headers: Record<string, string> | undefined,
  now = Date.now(),
): number | undefined {
  if (!headers) return undefined;
  const get = (name: string) =>
    headers[name] ?? Object.entries(headers).find(([k]) => k.toLowerCase() === name)?.[1];
  let ms: number | undefined;
  const msHeader = get('retry-after-ms');
  if (msHeader !== undefined && !Number.isNaN(parseFloat(msHeader))) ms = parseFloat(msHeader);
  const header = get('retry-after');
  if (ms === undefined && header !== undefined) {
    const seconds = Number(header.trim());
    ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - now;
  }
  if (ms === undefined || Number.isNaN(ms) || ms < 0 || ms > MAX_RETRY_AFTER_MS) return undefined;
  // Temporal reads a zero delay as "no delay given"; a millisecond keeps "retry at once".
  return Math.max(1, Math.round(ms));
}

/**
 * The provider's own error text (OpenAI `{error:{message}}`, Anthropic `{error:{type,message}}`), masked, then
 * shortened (masking first: a key cut in two would no longer look like one).
 */
function providerMessage(err: APICallError, mask: (text: string) => string): string {
  let text = '';
  try {
    const body = JSON.parse(err.responseBody ?? '') as {
      error?: { message?: unknown } | string;
      message?: unknown;
    };
    const e = body.error;
    text =
      typeof e === 'string'
        ? e
        : typeof e?.message === 'string'
          ? e.message
          : typeof body.message === 'string'
            ? body.message
            : '';
  } catch {
    text = err.responseBody ?? '';
  }
  if (!text) text = err.message;
  text = mask(text);
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}

function isTimeout(err: unknown): boolean {
  return err instanceof Error && (err.name === 'TimeoutError' || /timeout/i.test(err.name));
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
