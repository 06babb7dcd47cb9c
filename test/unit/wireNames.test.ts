/**
 * The one table of wire names (src/domain/wireNames.ts) against what uses it: docs/protocol.md's "Every wire name"
 * lists exactly its signals, updates and queries (and exactly the core event types), and src/contract defines one
 * handle per name, of its kind. No server.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import * as contract from '../../src/contract';
import { CORE_EVENT_TYPES } from '../../src/domain/events';
import { SIGNAL_NAMES, SIGNAL_NAMES_TEXT, WIRE_HANDLERS, type WireName } from '../../src/domain/wireNames';

const PROTOCOL = path.join(__dirname, '..', '..', 'docs', 'protocol.md');

/** The rows of docs/protocol.md's "Every wire name" table as `kind name` (the kind without its parenthesis). */
function documentedNames(): string[] {
  const lines = readFileSync(PROTOCOL, 'utf8').split('\n');
  const start = lines.indexOf('## Every wire name');
  expect(start, 'docs/protocol.md has a section "## Every wire name"').toBeGreaterThanOrEqual(0);
  const section = lines.slice(start + 1);
  const end = section.findIndex((l) => l.startsWith('#'));
  const rows: string[] = [];
  for (const line of end < 0 ? section : section.slice(0, end)) {
    const cells = line.split('|').map((c) => c.trim());
    const kind = cells[1]?.replace(/\s*\(.*\)$/, '');
    const name = /^`([^`]+)`$/.exec(cells[2] ?? '')?.[1];
    if (kind && name) rows.push(`${kind} ${name}`);
  }
  return rows;
}

/** The table's names as `kind name`. */
function tableNames(): string[] {
  return (Object.keys(WIRE_HANDLERS) as WireName[]).map((name) => `${WIRE_HANDLERS[name].kind} ${name}`);
}

describe('the table of wire names', () => {
  it('is what docs/protocol.md lists as signals, updates and queries, both ways', () => {
    const documented = documentedNames().filter((row) => /^(signal|update|query) /.test(row));
    expect(documented.sort()).toEqual(tableNames().sort());
  });

  it('marks internal what docs/protocol.md marks internal', () => {
    const text = readFileSync(PROTOCOL, 'utf8');
    const internal = (Object.keys(WIRE_HANDLERS) as WireName[]).filter(
      (name) => 'internal' in WIRE_HANDLERS[name],
    );
    for (const name of Object.keys(WIRE_HANDLERS)) {
      const row = text.split('\n').find((l) => l.includes(`| \`${name}\``));
      expect(row?.includes('internal'), name).toBe(internal.includes(name as WireName));
    }
  });

  it("lists the core event types as docs/protocol.md's events, both ways", () => {
    const documented = documentedNames()
      .filter((row) => row.startsWith('event '))
      .map((row) => row.slice('event '.length));
    expect(documented.sort()).toEqual([...CORE_EVENT_TYPES].sort());
  });

  it('names every handle of src/contract, and src/contract defines one handle per name, of its kind', () => {
    const handles = Object.values(contract as Record<string, unknown>).filter(
      (v): v is { type: string; name: string } =>
        typeof v === 'object' && v !== null && 'type' in v && 'name' in v && typeof v.name === 'string',
    );
    expect(handles.map((h) => `${h.type} ${h.name}`).sort()).toEqual(tableNames().sort());
  });

  it('lists the signals in a sentence as the refusal of an unknown signal says it', () => {
    expect(SIGNAL_NAMES).toEqual(['followup', 'steer', 'inject', 'cancel', 'dispose', 'upgrade']);
    expect(SIGNAL_NAMES_TEXT).toBe('followup, steer, inject, cancel, dispose or upgrade');
  });
});
