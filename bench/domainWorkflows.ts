/**
 * A bundle for the `manySessions` memory comparison: the bare workflow of bench/floorWorkflows.ts, plus our domain
 * modules (src/domain: the zod schemas of the wire, events and messages, the driver) evaluated and kept alive, but
 * never used. What a cached workflow of it takes beyond the floor is the per-workflow cost of evaluating src/domain.
 */
import * as domain from '../src/domain';
export { bareSignalActivity } from './floorWorkflows';

/** Keeps the import from being dropped; never called. */
export function domainModuleNames(): string[] {
  return Object.keys(domain);
}
