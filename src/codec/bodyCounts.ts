/**
 * Counts what JSON.parse would build from a codec request body, without building it, so the codec server refuses a
 * body of many tiny values before parsing it: JSON.parse of 8 MiB of `{},{},…` holds about 280 MB, of 200,000 tiny
 * payloads (11 MB) the server held 460 MB once the codec had them. One pass over the text, no allocation. Pure.
 */

export interface BodyCounts {
  /** Items of the arrays directly inside the body's top object: for `{"payloads": [...]}`, the payloads. */
  items: number;
  /**
   * Keys and values, counted from their separators: every `{`, `[`, `,` and `:` outside strings, plus one for the
   * top value. Each key or value but the first follows one of them, so JSON.parse makes at most this many.
   */
  values: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

const isSpace = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** Counts `text` as above. Malformed JSON is counted as far as it goes; JSON.parse reports it afterwards. */
export function countBody(text: string): BodyCounts {
  let depth = 0;
  let inString = false;
  let escaped = false;
  /** Whether the container at depth 2 (directly inside the top one) is an array. */
  let topArray = false;
  /** Inside that array, before its first item. */
  let awaitingFirst = false;
  let items = 0;
  let values = 1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (escaped) escaped = false;
      else if (c === BACKSLASH) escaped = true;
      else if (c === QUOTE) inString = false;
      continue;
    }
    if (isSpace(c)) continue;
    if (awaitingFirst) {
      awaitingFirst = false;
      if (c !== CLOSE_BRACKET) items++;
    }
    switch (c) {
      case QUOTE:
        inString = true;
        break;
      case OPEN_BRACE:
      case OPEN_BRACKET:
        values++;
        depth++;
        if (depth === 2) {
          topArray = c === OPEN_BRACKET;
          awaitingFirst = topArray;
        }
        break;
      case CLOSE_BRACE:
      case CLOSE_BRACKET:
        depth--;
        break;
      case COMMA:
        values++;
        if (depth === 2 && topArray) items++;
        break;
      case COLON:
        values++;
        break;
    }
  }
  return { items, values };
}
