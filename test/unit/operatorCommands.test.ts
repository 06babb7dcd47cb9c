/**
 * The argument checks and error wording of the operator commands (docs/upgrades.md "How to roll out"); the commands
 * against a dev server with two builds: test/integration/operatorCommands.test.ts.
 */
import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { replayErrorDetail } from '../../src/cli/commands/check';
import { percentOpt } from '../../src/cli/commands/versions';
import { setRampingVersion } from '../../src/client';

describe('operator command arguments', () => {
  it('reads a percentage from 0 to 100 and refuses others, naming --percent and the limit', () => {
    expect(percentOpt('10')).toBe(10);
    expect(percentOpt('12.5%')).toBe(12.5);
    expect(percentOpt('0')).toBe(0);
    expect(percentOpt(undefined)).toBeUndefined();
    for (const bad of ['150', '-1', 'ten', ''])
      expect(() => percentOpt(bad)).toThrow(`invalid --percent "${bad}": a percentage from 0 to 100`);
  });

  it('refuses a ramp outside 0–100 before calling the server', async () => {
    const client = {} as Client; // any call on it would throw a TypeError instead
    await expect(setRampingVersion(client, 'd', 'v2', 101)).rejects.toThrow(
      'invalid ramp percentage 101: must be between 0 and 100',
    );
  });

  it('keeps the part of a replay error that names the event and the command', () => {
    const err = new Error(
      "Replay failed with a nondeterminism error. Details: Failure { message: \"[TMPRL1100] Nondeterminism error: Activity type of scheduled event 'step' does not match activity type of activity command 'prep'\" }",
    );
    err.name = 'DeterminismViolationError';
    expect(replayErrorDetail(err)).toBe(
      "DeterminismViolationError: [TMPRL1100] Nondeterminism error: Activity type of scheduled event 'step' does not match activity type of activity command 'prep'",
    );
    expect(replayErrorDetail(new Error('boom\nstack'))).toBe('Error: boom');
  });
});
