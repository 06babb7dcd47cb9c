/**
 * Lazy schemas (src/domain/lazy.ts): built once on first use, and still usable after the deep freeze a worker applies
 * to the modules it shares between workflows — the reason `src/domain` can be shared (docs/performance.md).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { lazy } from '../../src/domain/lazy';
import * as domain from '../../src/domain/index';

/**
 * What the worker's reusable V8 context does to a preloaded module's exports: walk own keys depth-first, freeze
 * each object (tolerating values that refuse), then freeze the module record itself.
 */
function freezeLikeTheWorker(object: unknown, seen = new WeakSet<object>()): void {
  if (object === null || (typeof object !== 'object' && typeof object !== 'function')) return;
  if (seen.has(object) || Object.isFrozen(object)) return;
  seen.add(object);
  for (const key of Reflect.ownKeys(object)) {
    const value = (object as Record<PropertyKey, unknown>)[key];
    try {
      freezeLikeTheWorker(value, seen);
    } catch {
      // Some values refuse to be frozen; the worker goes on.
    }
  }
  Object.freeze(object);
}

describe('lazy schemas', () => {
  it('builds the schema on the first use, not at import, and only once', () => {
    let builds = 0;
    const schema = lazy(() => {
      builds += 1;
      return z.object({ name: z.string().max(3) });
    });
    expect(builds).toBe(0);
    expect(schema.safeParse({ name: 'abc' }).success).toBe(true);
    expect(schema.safeParse({ name: 'abcd' }).success).toBe(false);
    expect(schema.shape.name).toBeInstanceOf(z.ZodString);
    expect(builds).toBe(1);
  });

  it('is neither built nor frozen by a deep freeze, and validates afterwards', () => {
    let builds = 0;
    const exportsObject = {
      Schema: lazy(() => {
        builds += 1;
        return z.object({ limit: z.number().int().max(10) });
      }),
    };
    freezeLikeTheWorker(exportsObject);
    expect(Object.isFrozen(exportsObject)).toBe(true);
    expect(builds).toBe(0);
    expect(exportsObject.Schema.parse({ limit: 3 })).toEqual({ limit: 3 });
    const refused = exportsObject.Schema.safeParse({ limit: 11 });
    expect(refused.success).toBe(false);
    expect(refused.error?.issues[0]?.path).toEqual(['limit']);
    expect(exportsObject.Schema).toBeInstanceOf(z.ZodObject);
  });

  it('leaves every domain schema usable after the whole domain module is deep-frozen', () => {
    const shared = { ...domain };
    freezeLikeTheWorker(shared);
    const ok = domain.MessageInputSchema.safeParse({ content: 'hello' });
    expect(ok.success).toBe(true);
    const bad = domain.MessageInputSchema.safeParse({ content: 5 });
    expect(bad.success).toBe(false);
    expect(domain.describeZodIssue(bad.error!.issues)).toMatch(/content/);
    expect(domain.SessionConfigSchema.safeParse({ model: { provider: 'nope' } }).success).toBe(false);
  });
});
