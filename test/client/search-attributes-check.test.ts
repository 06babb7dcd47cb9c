/**
 * The once-per-client check of the session search attributes (src/client/visibility.ts): the time-skipping test
 * server's UNIMPLEMENTED is expected and prints nothing (issue 35, part 5); any other refusal, or UNIMPLEMENTED from a
 * Temporal server, still warns once.
 */
import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { searchAttributesCheck } from '../../src/client/visibility';

const UNIMPLEMENTED = Object.assign(
  new Error(
    '12 UNIMPLEMENTED: Method temporal.api.operatorservice.v1.OperatorService/ListSearchAttributes is unimplemented',
  ),
  { code: 12 },
);
const DENIED = Object.assign(new Error('7 PERMISSION_DENIED: Request unauthorized.'), { code: 7 });

/** A client whose operator service refuses with `err`; `testService` as on a time-skipping env's connection. */
function client(err: Error, server: { testService?: boolean; serverVersion?: string }): Client {
  return {
    options: { namespace: 'default' },
    connection: {
      operatorService: { listSearchAttributes: () => Promise.reject(err) },
      ...(server.testService ? { testService: {} } : {}),
    },
    workflowService: { getSystemInfo: () => Promise.resolve({ serverVersion: server.serverVersion ?? '' }) },
  } as unknown as Client;
}

async function check(c: Client): Promise<{ registered: boolean; warnings: string[] }> {
  const warnings: string[] = [];
  const registered = await searchAttributesCheck(c, (m) => warnings.push(m))();
  return { registered, warnings };
}

describe('the search attribute check', () => {
  it('is silent on the time-skipping server (a TestWorkflowEnvironment connection): sessions start without them', async () => {
    expect(await check(client(UNIMPLEMENTED, { testService: true }))).toEqual({
      registered: false,
      warnings: [],
    });
  });

  it('is silent on the test server reached by a plain connection (no server version)', async () => {
    expect(await check(client(UNIMPLEMENTED, {}))).toEqual({ registered: false, warnings: [] });
  });

  it('warns when a Temporal server (it names its version) answers UNIMPLEMENTED', async () => {
    const { registered, warnings } = await check(client(UNIMPLEMENTED, { serverVersion: '1.27.2' }));
    expect(registered).toBe(false);
    expect(warnings).toEqual([
      expect.stringMatching(
        /could not check the session search attributes in namespace default \(12 UNIMPLEMENTED/,
      ),
    ]);
  });

  it('warns for any other refusal, on the test server too', async () => {
    const { warnings } = await check(client(DENIED, { testService: true }));
    expect(warnings).toEqual([expect.stringMatching(/could not check .*PERMISSION_DENIED/)]);
  });
});
