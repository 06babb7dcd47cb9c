/**
 * The size caps of activity results and the masking of secrets in provider text (issue 33; docs/protocol.md,
 * "Sizes"), on the pure functions the activities call: how an answer and a result are measured, what happens over
 * each cap, which caps a worker may set, and what `maskSecrets` hides and keeps.
 */
import { describe, expect, it } from 'vitest';
import { ApplicationFailure } from '@temporalio/common';
import {
  DEFAULT_MAX_ANSWER_BYTES,
  DEFAULT_MAX_TOOL_RESULT_BYTES,
  jsonBytes,
  utf8Bytes,
} from '../../src/domain/sizes';
import { answerBytes, capToolResult, checkAnswer, resultCaps } from '../../src/activities/resultSizes';
import { maskSecrets } from '../../src/activities/secrets';
import { loadConfig } from '../../src/worker/config';
import type { ModelStepResult, ToolExecResult } from '../../src/activities/types';

describe('utf8Bytes and jsonBytes', () => {
  it('count UTF-8 bytes as Buffer does, for short and long text with every width of character', () => {
    for (const text of ['', 'a', 'é', '€', '😀', 'ab€😀é'.repeat(1000), 'x'.repeat(100_000), '\ud800 lone']) {
      expect(utf8Bytes(text)).toBe(Buffer.byteLength(text, 'utf8'));
    }
    expect(jsonBytes({ text: 'é' })).toBe(Buffer.byteLength('{"text":"é"}'));
  });
});

describe('the answer cap', () => {
  const answer = (
    text: string,
    args: Record<string, unknown> | null = {},
    raw?: string,
  ): ModelStepResult => ({
    text,
    toolCalls: [
      { callId: 'c1', name: 'echo', arguments: args, ...(raw !== undefined ? { rawArguments: raw } : {}) },
    ],
    finish: 'tool-calls',
  });

  it('counts the text and each call’s arguments (as JSON, or the raw text when they did not parse)', () => {
    expect(answerBytes(answer('héllo', { a: 1 }))).toBe(6 + 7);
    expect(answerBytes(answer('', null, '{not json'))).toBe(9);
  });

  it('passes an answer within the cap and refuses one over it, not retried, naming both sizes', () => {
    const ok = answer('x'.repeat(1000));
    expect(checkAnswer('openai', ok, 1002)).toBe(ok);
    let thrown: unknown;
    try {
      checkAnswer('openai', answer('x'.repeat(1000)), 1001);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ApplicationFailure);
    expect(thrown).toMatchObject({
      type: 'ModelAnswerTooLarge',
      nonRetryable: true,
      message:
        "openai's answer passed the limit of 1001 bytes (1001 bytes of text and tool-call arguments, worker option maxAnswerBytes): it is 1002 bytes",
    });
  });
});

describe('the tool result cap', () => {
  const result = (text: string, concludesTurn = false): ToolExecResult => ({
    content: [{ type: 'text', text }],
    additionalContexts: [{ content: [{ type: 'text', text: 'context' }] }],
    concludesTurn,
  });

  it('keeps a result within the cap as it is', () => {
    const r = result('x'.repeat(500));
    expect(capToolResult('big', r, jsonBytes(r))).toBe(r);
  });

  it('turns a result over the cap into TOOL_RESULT_TOO_LARGE naming its size and the limit; concludesTurn stays', () => {
    const r = result('x'.repeat(3000), true);
    const capped = capToolResult('big', r, 2048);
    const message = `the result of tool "big" is 3.1 KB (${jsonBytes(r)} bytes), over the limit of 2.0 KB (2048 bytes, worker option maxToolResultBytes): it was not kept; ask for less`;
    expect(capped).toEqual({
      content: [{ type: 'text', text: `error: ${message}` }],
      error: { code: 'TOOL_RESULT_TOO_LARGE', message },
      additionalContexts: [],
      concludesTurn: true,
    });
  });
});

describe('which caps a worker may set', () => {
  it('defaults to 1 MiB of answer and 1.5 MiB of tool result', () => {
    expect(resultCaps()).toEqual({
      maxAnswerBytes: DEFAULT_MAX_ANSWER_BYTES,
      maxToolResultBytes: DEFAULT_MAX_TOOL_RESULT_BYTES,
    });
    expect(DEFAULT_MAX_ANSWER_BYTES).toBe(1024 * 1024);
    expect(DEFAULT_MAX_TOOL_RESULT_BYTES).toBe(1536 * 1024);
  });

  it('refuses a cap below 1 KiB or above what fits under the 2 MiB payload limit, naming the option', () => {
    expect(() => resultCaps({ maxAnswerBytes: 100 })).toThrow(
      /^maxAnswerBytes: must be an integer from 1024 to 1966080/,
    );
    expect(() => resultCaps({ maxToolResultBytes: 3 * 1024 * 1024 })).toThrow(
      /^maxToolResultBytes: must be an integer from 1024 to 1966080/,
    );
    expect(resultCaps({ maxAnswerBytes: 4096 }).maxAnswerBytes).toBe(4096);
  });

  it('reads them from AGENT_SESSIONS_MAX_ANSWER_BYTES and AGENT_SESSIONS_MAX_TOOL_RESULT_BYTES, naming a bad one', () => {
    const config = loadConfig({
      AGENT_SESSIONS_MAX_ANSWER_BYTES: '65536',
      AGENT_SESSIONS_MAX_TOOL_RESULT_BYTES: '131072',
    });
    expect([config.maxAnswerBytes, config.maxToolResultBytes]).toEqual([65536, 131072]);
    expect(() => loadConfig({ AGENT_SESSIONS_MAX_ANSWER_BYTES: '5000000' })).toThrow(
      "invalid configuration: AGENT_SESSIONS_MAX_ANSWER_BYTES: at most 1966080 bytes (Temporal's payload limit is 2 MiB)",
    );
  });
});

describe('maskSecrets', () => {
  it('hides a secret the worker holds wherever it appears, and keys that look like keys', () => {
    const key = 'compat-key-1234';
    expect(maskSecrets(`Incorrect API key provided: ${key}.`, [key])).toBe(
      'Incorrect API key provided: [redacted].',
    );
    expect(maskSecrets('bad key sk-proj-abcdefgh12345678 given')).toBe('bad key [redacted] given');
    expect(maskSecrets('token ghp_0123456789abcdefABCDEF0123 revoked')).toBe('token [redacted] revoked');
    expect(maskSecrets('AWS AKIAABCDEFGHIJKLMNOP denied')).toBe('AWS [redacted] denied');
  });

  it('hides credentials after an auth scheme, in fields named like keys, and in URL parameters', () => {
    expect(maskSecrets('got Authorization: Bearer abc.def-ghi')).toBe(
      'got Authorization: [redacted] [redacted]',
    );
    expect(maskSecrets('header was Bearer abcdef123')).toBe('header was Bearer [redacted]');
    expect(maskSecrets('{"api_key": "hunter22", "model": "gpt"}')).toBe(
      '{"api_key": "[redacted]", "model": "gpt"}',
    );
    expect(maskSecrets('GET https://x.example/v1?key=plainsecret&model=m')).toBe(
      'GET https://x.example/v1?key=[redacted]&model=m',
    );
    expect(maskSecrets('password=opensesame')).toBe('password=[redacted]');
  });

  it('hides long random-looking runs (base64, hex, JWTs), and keeps words, model names and URL paths', () => {
    expect(maskSecrets('key Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MEFCQ0RFRkdISUpL was revoked')).toBe(
      'key [redacted] was revoked',
    );
    expect(
      maskSecrets(
        'jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
      ),
    ).toBe('jwt [redacted]');
    for (const kept of [
      'cannot reach openai-compatible at http://127.0.0.1:41077/v1/chat/completions/with/a/longer/path123',
      'The model gpt-4o-mini-2024-07-18-preview-extended-context does not exist',
      'request 0b7c-11ee-be56-0242ac120002 failed',
    ])
      expect(maskSecrets(kept)).toBe(kept);
    expect(
      maskSecrets('session 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 failed'),
    ).toBe('session [redacted] failed');
    const plain =
      "The model 'gpt-4o-mini' does not exist or you do not have access to it (rate limit: 30 requests per minute).";
    expect(maskSecrets(plain)).toBe(plain);
    expect(maskSecrets('a_very_long_identifier_without_any_digits_at_all')).toBe(
      'a_very_long_identifier_without_any_digits_at_all',
    );
  });

  it('ignores known secrets too short to mask safely', () => {
    expect(maskSecrets('the key was abc', ['abc'])).toBe('the key was abc');
  });
});
