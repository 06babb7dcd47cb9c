/**
 * The session's tool and hook names, resolved on the worker once per run: the `resolve-tools` / `resolve-hooks`
 * effects of the turn loop and the `deliver` update's name check ("told at once", rule 5) share one memo, so a run
 * asks each `describe*` activity at most once at a time and never again after it succeeded. A failure is returned
 * as data (and asked again at a later boundary); the driver keeps its own copy of what it was answered. Deterministic
 * (workflow sandbox).
 */
import { ApplicationFailure } from '@temporalio/workflow';
import { ErrorCodes, FailureTypes } from '../contract';
import type { HookDescriptor, Resolved, ToolDescriptor } from '../domain/effects';
import type { SessionConfig } from '../domain/wire';
import { setupActivities } from './activities';
import { failed, failureType } from './errors';

/**
 * A resolution; a failed one carries the failure type the `deliver` update rejects with, and `refused` when the
 * worker refused the names (the activity failed with that type; not a timeout or an unreachable MCP server).
 */
export type Resolution<T> = Resolved<T> & ({ kind: 'ok' } | { failureType: string; refused?: true });

export class SessionNames {
  private readonly toolNames = new Resolver<ToolDescriptor[]>(
    (names) =>
      setupActivities.describeTools.executeWithOptions({ summary: `describe tools ${names.join(', ')}` }, [
        { names },
      ]),
    [],
    FailureTypes.UnknownTool,
    ErrorCodes.UnknownTool,
  );
  private readonly hookNames = new Resolver<HookDescriptor[]>(
    (names) =>
      setupActivities.describeHooks.executeWithOptions({ summary: `describe hooks ${names.join(', ')}` }, [
        { names },
      ]),
    [],
    FailureTypes.UnknownHook,
    ErrorCodes.UnknownHook,
  );

  constructor(private readonly config: SessionConfig) {}

  tools(): Promise<Resolution<ToolDescriptor[]>> {
    return this.toolNames.get(this.config.tools ?? []);
  }

  hooks(): Promise<Resolution<HookDescriptor[]>> {
    return this.hookNames.get(this.config.hooks ?? []);
  }

  /** Whether the session's tool or hook names are still to be checked on the worker in this run. */
  unchecked(): boolean {
    return (
      this.toolNames.unchecked(this.config.tools ?? []) || this.hookNames.unchecked(this.config.hooks ?? [])
    );
  }

  /** Resolves the session's tools and hooks, tools first. */
  all(): Promise<Resolution<unknown>[]> {
    return Promise.all([this.tools(), this.hooks()]);
  }
}

/** Throws a failed resolution as the non-retryable ApplicationFailure the `deliver` update rejects with. */
export function throwIfFailed(resolution: Resolution<unknown>): void {
  if (resolution.kind === 'failed')
    throw ApplicationFailure.create({
      type: resolution.failureType,
      message: resolution.error.message,
      nonRetryable: true,
    });
}

/** One name check: at most one activity in flight; a failure is returned (and asked again later), a success kept. */
class Resolver<T> {
  private pending: Promise<Resolution<T>> | undefined;
  private value: T | undefined;

  constructor(
    private readonly describe: (names: string[]) => Promise<T>,
    private readonly none: T,
    private readonly failureType: string,
    private readonly fallbackCode: string,
  ) {}

  /** Whether the names are still to be checked (some are named and no check has succeeded yet). */
  unchecked(names: readonly string[]): boolean {
    return this.value === undefined && names.length > 0;
  }

  get(names: string[]): Promise<Resolution<T>> {
    if (this.value !== undefined) return Promise.resolve({ kind: 'ok', value: this.value });
    if (names.length === 0) return Promise.resolve({ kind: 'ok', value: (this.value = this.none) });
    this.pending ??= this.describe(names).then(
      (value): Resolution<T> => {
        this.value = value;
        return { kind: 'ok', value };
      },
      (err: unknown): Resolution<T> => {
        this.pending = undefined;
        const refused = failureType(err) === this.failureType ? { refused: true as const } : {};
        return { ...failed(err, this.fallbackCode), failureType: this.failureType, ...refused };
      },
    );
    return this.pending;
  }
}
