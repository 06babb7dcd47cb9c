/**
 * Masks what looks like a key or token in text that came from outside (a provider's error body, a hook endpoint's
 * answer) before it becomes a failure message, which Temporal stores in history and workers log: a read-only viewer
 * or an MCP `events` reader must never see a key a server echoed back (docs/protocol.md, "Sizes and secrets").
 * Masked: the secrets the worker itself holds (its provider keys), exactly; `Bearer <token>` and `Basic <token>`;
 * values of JSON fields and URL parameters named like a key, token, secret or password; well-known key shapes
 * (`sk-…`, `ghp_…`, `xoxb-…`, `AKIA…`, `AIza…`, JWTs); and any run of 32 or more key-like characters that mixes
 * upper case, lower case and digits (base64 and random keys) or is hexadecimal with letters and digits. Lower-case
 * runs (model names, URL paths) stay. Each secret becomes `[redacted]`. Pure.
 */

export const REDACTED = '[redacted]';

/** Known key prefixes: OpenAI/Anthropic `sk-`, GitHub, Slack, AWS access key ids, Google API keys. */
const KEY_SHAPES =
  /\b(?:sk-[A-Za-z0-9_-]{8,}|gh[pousr]_[A-Za-z0-9]{16,}|xox[abposr]-[A-Za-z0-9-]{8,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{20,})/g;
/** An authorization scheme and its credential. */
const AUTH_SCHEMES = /\b(Bearer|Basic|Token)(\s+)[A-Za-z0-9._~+/=-]{6,}/gi;
/** `"api_key": "…"`, `'token': '…'`, `password=…`, `?key=…` and the like. */
const NAMED_FIELDS =
  /((?:api[_-]?key|x-api-key|key|token|access[_-]?token|refresh[_-]?token|secret|client[_-]?secret|password|passwd|authorization)["']?\s*[:=]\s*["']?)([^"'\s,&;}]{4,})/gi;
/** A long run of key-like characters (base64, hex, url-safe); `looksRandom` decides. */
const LONG_TOKENS = /[A-Za-z0-9_+/=-]{32,}/g;
const JWT = /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/g;

/** Upper case, lower case and digits together, or hexadecimal letters and digits: a key, not a word or a path. */
function looksRandom(run: string): boolean {
  const digit = /[0-9]/.test(run);
  if (/[A-Z]/.test(run) && /[a-z]/.test(run) && digit) return true;
  return digit && /[a-f]/i.test(run) && /^(?:[0-9a-f]+|[0-9A-F]+)$/.test(run);
}

/**
 * `text` with every secret of `known` (8 characters or more; shorter ones would mask ordinary words) and everything
 * shaped like a key replaced by `[redacted]`.
 */
export function maskSecrets(text: string, known: readonly (string | undefined)[] = []): string {
  let out = text;
  for (const secret of known) {
    if (secret && secret.length >= 8) out = out.split(secret).join(REDACTED);
  }
  return out
    .replace(KEY_SHAPES, REDACTED)
    .replace(JWT, REDACTED)
    .replace(AUTH_SCHEMES, (_m, scheme: string, space: string) => `${scheme}${space}${REDACTED}`)
    .replace(NAMED_FIELDS, (m, name: string, value: string) =>
      value === REDACTED ? m : `${name}${REDACTED}`,
    )
    .replace(LONG_TOKENS, (run) => (looksRandom(run) ? REDACTED : run));
}
