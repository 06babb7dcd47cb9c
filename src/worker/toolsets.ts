/** Named toolsets a worker can register by configuration (AGENT_SESSIONS_TOOLSETS). Not deterministic. */
import type { ToolDefinition } from '../activities/tools';
import { demoTools } from '../activities/demoTools';
import { subsessionTools } from '../activities/subsessionTools';
import { testingTools } from '../activities/testingTools';

export const TOOLSETS: Record<string, ToolDefinition[]> = {
  testing: testingTools,
  demo: demoTools,
  subsessions: subsessionTools,
};

/** The tools of the named toolsets. Throws an Error naming an unknown toolset and the known ones. */
export function toolsFromToolsets(names: readonly string[]): ToolDefinition[] {
  return names.flatMap((name) => {
    const set = TOOLSETS[name];
    if (!set)
      throw new Error(
        `unknown toolset "${name}" in AGENT_SESSIONS_TOOLSETS (known: ${Object.keys(TOOLSETS).join(', ')})`,
      );
    return set;
  });
}
