/**
 * Schemas built on first use, once per module instance.
 *
 * Why: a worker gives every workflow its own instance of every bundled module, so a schema built when its module
 * loads costs every cached session its memory, whether or not the session ever uses it (docs/performance.md,
 * manySessions: `src/domain`'s schemas were most of a cached idle session's 2.3 MB). Two things follow from this
 * module. A lazy schema is built the first time it is used, so a module instance only pays for the schemas its
 * workflow actually validates with. And the worker preloads `src/domain` into the worker's shared V8 context
 * (src/worker/bundle.ts), where one module instance serves every workflow: the SDK deep-freezes preloaded modules,
 * which zod 4's schemas cannot survive (they define their methods on first use); a lazy schema refuses to be frozen
 * and is built after the freeze, on its first use, so it stays usable — and is built once per worker.
 *
 * zod keeps a little state of its own that it fills on first use: its global config (on `globalThis`: the default
 * locale and memoizer, set when the first schema is built) and whether code generation is allowed (probed on the
 * first object parse). In the shared context those would be frozen empty, and every later first use would throw
 * (`Cannot add property localeError, object is not extensible`); so this module builds and runs one small schema
 * when it loads, before the freeze, which fills them (`primeZod`).
 *
 * A lazy schema behaves like the schema for property reads, method calls, `in` and `instanceof`; it has no own keys
 * (never spread one: spread its `.shape`). Pure and deterministic: building a schema does no I/O.
 */

import { z } from 'zod';

/** Fills zod's own first-use state (global config, code-generation probe) while it can still be written. */
function primeZod(): void {
  z.object({ list: z.array(z.string()) }).safeParse({ list: ['x'] });
}
primeZod();

/** The object `build` returns, built on the first property read and kept. */
export function lazy<T extends object>(build: () => T): T {
  let built: T | undefined;
  const target = (): T => (built ??= build());
  return new Proxy({} as T, {
    get: (_, key) => Reflect.get(target(), key),
    has: (_, key) => Reflect.has(target(), key),
    set: (_, key, value) => Reflect.set(target(), key, value),
    getPrototypeOf: () => Reflect.getPrototypeOf(target()),
    // No own keys and no freezing: a deep freeze (the SDK's, of preloaded modules) walks own keys and then freezes;
    // it must neither build the schema at preload time nor freeze it. Object.freeze of a lazy schema throws
    // TypeError, which the SDK's deep freeze tolerates.
    ownKeys: () => [],
    getOwnPropertyDescriptor: () => undefined,
    defineProperty: (_, key, descriptor) => Reflect.defineProperty(target(), key, descriptor),
    preventExtensions: () => false,
  });
}
