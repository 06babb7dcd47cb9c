/**
 * The pure helpers behind the HTTP surfaces' limits: `countBody` (src/codec/bodyCounts.ts) counts what JSON.parse
 * would build without building it (for any JSON value, at least the keys and values JSON.parse makes; a codec body's
 * payloads exactly, whatever its strings hold), and `servedHosts` (src/http/hosts.ts) names the Host headers a server
 * answers to.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { countBody } from '../../src/codec/bodyCounts';
import { isServedOrigin, servedHosts } from '../../src/http/hosts';

/** Keys and values JSON.parse makes for `value` (the value itself included). */
function realCount(value: unknown): number {
  if (Array.isArray(value)) return 1 + value.reduce((n: number, v) => n + realCount(v), 0);
  if (typeof value === 'object' && value !== null)
    return 1 + Object.entries(value).reduce((n, [, v]) => n + 1 + realCount(v), 0);
  return 1;
}

describe('countBody', () => {
  it('counts a codec body’s payloads exactly, and brackets, commas and quotes inside strings not at all', () => {
    const tricky = { metadata: { 'a,b:{[': 'x\\",]}', '"': '' }, data: '[{,:}]' };
    expect(countBody(JSON.stringify({ payloads: [tricky, {}, tricky] }))).toEqual({
      items: 3,
      // One more than JSON.parse makes: the empty `{}` counts by its brace, not by a value inside.
      values: realCount({ payloads: [tricky, {}, tricky] }) + 1,
    });
    expect(countBody('{"payloads":[]}').items).toBe(0);
    expect(countBody('{"payloads":[ {} ]}').items).toBe(1);
    expect(countBody(' { "payloads" : [ 1 , 2 ] } ').items).toBe(2);
    // Only arrays directly inside the top object hold items; an object there holds keys.
    expect(countBody('{"payloads":{"a":1,"b":2}}').items).toBe(0);
  });

  it('never counts fewer keys and values than JSON.parse makes', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = JSON.stringify(value);
        expect(countBody(text).values).toBeGreaterThanOrEqual(realCount(JSON.parse(text)));
      }),
      { seed: 33, numRuns: 500 },
    );
  });

  it('counts the items of a top-level array exactly', () => {
    fc.assert(
      fc.property(fc.array(fc.jsonValue(), { maxLength: 20 }), (payloads) => {
        expect(countBody(JSON.stringify({ payloads })).items).toBe(payloads.length);
      }),
      { seed: 33, numRuns: 300 },
    );
  });
});

describe('servedHosts', () => {
  it('serves the address listened on, and every loopback name on loopback', () => {
    expect(servedHosts('127.0.0.1', 4280)).toEqual(['127.0.0.1:4280', 'localhost:4280', '[::1]:4280']);
    expect(servedHosts('::1', 8765)).toEqual(['[::1]:8765', '127.0.0.1:8765', 'localhost:8765']);
    expect(servedHosts('::ffff:127.0.0.1', 8888)).toEqual(['127.0.0.1:8888', 'localhost:8888', '[::1]:8888']);
    expect(servedHosts('10.0.0.5', 8888, ['codec.internal:8888'])).toEqual([
      '10.0.0.5:8888',
      'codec.internal:8888',
    ]);
    expect(servedHosts('10.0.0.5', 8888)).not.toContain('localhost:8888');
  });

  it('takes only the http origin of a served host', () => {
    const hosts = servedHosts('127.0.0.1', 4280);
    expect(isServedOrigin('http://localhost:4280', hosts)).toBe(true);
    expect(isServedOrigin('http://evil.example', hosts)).toBe(false);
    expect(isServedOrigin('https://localhost:4280', hosts)).toBe(false);
  });
});
