/**
 * HTTP hooks: the hook input is POSTed as JSON to a URL fixed by the worker's configuration; the JSON answer is the
 * decision. Bounded by a timeout and a response size cap; redirects are refused (the worker reaches only the URL
 * it was given). 408, 429 and 5xx and network errors are retryable; other statuses are not. Does I/O.
 */
import { checkHookName, HookError, type HookDefinition, type HookKind } from './types';
import { maskSecrets } from '../secrets';

export interface HttpHookSpec {
  name: string;
  kind: HookKind;
  /** http(s) URL the worker POSTs to. */
  url: string;
  /** Extra request headers (e.g. an authorization header for the hook service). */
  headers?: Record<string, string>;
  /** Longest wait for the whole answer (default 10 s). */
  timeoutMs?: number;
  /** Largest answer body (default 1 MiB). */
  maxResponseBytes?: number;
}

export const HTTP_HOOK_DEFAULTS = { timeoutMs: 10_000, maxResponseBytes: 1024 * 1024 } as const;

/** A hook answered by an HTTP endpoint. Throws when the name or URL is invalid. */
export function httpHook(spec: HttpHookSpec): HookDefinition {
  checkHookName(spec.name);
  const url = new URL(spec.url);
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new Error(`hook ${spec.name}: url must be http(s), got ${url.protocol}`);
  const timeoutMs = spec.timeoutMs ?? HTTP_HOOK_DEFAULTS.timeoutMs;
  const maxBytes = spec.maxResponseBytes ?? HTTP_HOOK_DEFAULTS.maxResponseBytes;
  return {
    name: spec.name,
    kind: spec.kind,
    describe: `http POST ${url.origin}${url.pathname}`,
    async call(input, ctx) {
      const timeout = AbortSignal.timeout(timeoutMs);
      // The header values are credentials (with and without their scheme): an answer echoing one is masked.
      const secrets = Object.values(spec.headers ?? {}).flatMap((v) => [v, v.replace(/^\w+\s+/, '')]);
      const signal = AbortSignal.any([ctx.signal, timeout]);
      let response: Response;
      try {
        response = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json', ...spec.headers },
          body: JSON.stringify(input),
          redirect: 'error',
          signal,
        });
        const body = await readCapped(response, maxBytes, signal);
        if (!response.ok) {
          const retryable = response.status >= 500 || response.status === 408 || response.status === 429;
          throw new HookError(
            `answered ${response.status}${body ? `: ${maskSecrets(body, secrets).slice(0, 300)}` : ''}`,
            retryable,
          );
        }
        return parseAnswer(body);
      } catch (err) {
        if (err instanceof HookError) throw err;
        if (timeout.aborted) throw new HookError(`no answer within ${timeoutMs} ms`, true);
        if (ctx.signal.aborted) throw err;
        const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
        throw new HookError(
          `request failed: ${err instanceof Error ? err.message : String(err)}${cause}`,
          true,
        );
      }
    },
  };
}

/** The body as text, failing (not retryable) once it passes `maxBytes`. */
async function readCapped(response: Response, maxBytes: number, signal: AbortSignal): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    if (signal.aborted) {
      await reader.cancel().catch(() => {});
      throw signal.reason;
    }
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      throw new HookError(`answer is larger than ${maxBytes} bytes`, false);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** An empty body means "no change" (`{}`); anything else must be JSON. */
export function parseAnswer(text: string): unknown {
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new HookError(`answer is not JSON: ${text.slice(0, 200)}`, false);
  }
}
