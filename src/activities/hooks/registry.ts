/**
 * Function hooks (`defineHook`) and the worker's hook registry. A session can only select registered hooks by
 * name; what a hook runs (code, URL, command) is fixed by the worker. Runs in activities.
 */
import {
  checkHookName,
  type HookCallContext,
  type HookDefinition,
  type HookKind,
  type PostToolHookInput,
  type PostToolHookOutput,
  type PreStepHookInput,
  type PreStepHookOutput,
} from './types';

export type FunctionHookSpec =
  | {
      name: string;
      kind: 'pre-step';
      run(input: PreStepHookInput, ctx: HookCallContext): PreStepHookOutput | Promise<PreStepHookOutput>;
    }
  | {
      name: string;
      kind: 'post-tool';
      run(input: PostToolHookInput, ctx: HookCallContext): PostToolHookOutput | Promise<PostToolHookOutput>;
    };

/** A hook implemented by a function on the worker. Throws when the name is invalid. */
export function defineHook(spec: FunctionHookSpec): HookDefinition {
  checkHookName(spec.name);
  return {
    name: spec.name,
    kind: spec.kind,
    describe: 'function',
    async call(input, ctx) {
      if (input.event !== spec.kind)
        throw new Error(`${spec.kind} hook ${spec.name} called with a ${input.event} input`);
      return spec.kind === 'pre-step'
        ? spec.run(input as PreStepHookInput, ctx)
        : spec.run(input as PostToolHookInput, ctx);
    },
  };
}

export class HookRegistry {
  private readonly hooks = new Map<string, HookDefinition>();

  constructor(hooks: Iterable<HookDefinition> = []) {
    for (const h of hooks) this.register(h);
  }

  register(hook: HookDefinition): this {
    checkHookName(hook.name);
    if (this.hooks.has(hook.name)) throw new Error(`hook "${hook.name}" is registered twice`);
    this.hooks.set(hook.name, hook);
    return this;
  }

  get(name: string): HookDefinition | undefined {
    return this.hooks.get(name);
  }

  kind(name: string): HookKind | undefined {
    return this.hooks.get(name)?.kind;
  }

  names(): string[] {
    return [...this.hooks.keys()].sort();
  }
}
