/**
 * Polling for tests that drive real processes (workers, servers, a cluster): polls `read` until `done` holds, for up
 * to `timeoutMs`. A failing read — an RPC while a server restarts — counts as not done; a worker process that died
 * (an error whose message starts with "worker exited early") ends the wait at once. Throws naming `what` with the
 * last value or error.
 */
export async function eventually<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  what: string,
  timeoutMs = 90_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await read();
      if (done(value)) return value;
      last = value;
    } catch (err) {
      if (err instanceof Error && err.message.startsWith('worker exited early')) throw err;
      last = err;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const shown = last instanceof Error ? last.message : JSON.stringify(last)?.slice(0, 2000);
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last: ${shown}`);
}
