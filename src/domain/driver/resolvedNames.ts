/**
 * The memo of resolved names: the session's tools and hooks, resolved on the worker once per run (none named needs
 * no worker). An unknown name ends the turn in error and is asked again by a later turn. Pure.
 */
import type { Answer, AnswerMap, Effect, HookDescriptor, Resolved, ToolDescriptor } from '../effects';
import type { SessionConfig } from '../wire';
import { ask } from './ask';

export class ResolvedNames {
  private tools: Map<string, ToolDescriptor> | undefined;
  private hooks: HookDescriptor[] | undefined;

  constructor(private readonly config: SessionConfig) {}

  /** The session's hooks: none named needs no worker; otherwise resolved once per run. */
  *resolveHooks(): Generator<Effect, AnswerMap['resolve-hooks'], Answer> {
    if (!this.hooks && (this.config.hooks ?? []).length === 0) this.hooks = [];
    if (this.hooks) return { kind: 'ok', value: this.hooks };
    const answer = yield* ask({ type: 'resolve-hooks' });
    if (answer.kind === 'ok') this.hooks = answer.value;
    return answer;
  }

  /** The session's tools, resolved once per run (an unknown name ends the turn in error; a later turn asks again). */
  *resolveTools(): Generator<Effect, Resolved<ReadonlyMap<string, ToolDescriptor>>, Answer> {
    if (!this.tools && (this.config.tools ?? []).length === 0) this.tools = new Map();
    if (this.tools) return { kind: 'ok', value: this.tools };
    const answer = yield* ask({ type: 'resolve-tools' });
    if (answer.kind !== 'ok') return answer;
    this.tools = new Map(answer.value.map((t) => [t.name, t]));
    return { kind: 'ok', value: this.tools };
  }
}
