/** `agent-sessions start <id>`: starts a session with a model and tools (no message). */
import { readFileSync } from 'node:fs';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { z } from 'zod';
import { issueField } from '../../domain/util';
import { formatModelRef, ScriptedStepSchema, type ScriptedStep, type SessionConfig } from '../../domain/wire';
import {
  intOpt,
  parseModel,
  parseTools,
  positionals,
  sessionIdArg,
  stringOpt,
  type OptionSpec,
} from '../args';
import { out, type Command } from '../command';
import { withSessions } from '../connect';
import { CliError, UsageError } from '../errors';

/** The options that make a session's config: `start`'s, and `schedule create`'s for a session it starts. */
export const START_OPTIONS = {
  model: { type: 'string' },
  tools: { type: 'string' },
  script: { type: 'string' },
  system: { type: 'string' },
  labels: { type: 'string' },
  tenant: { type: 'string' },
  approvals: { type: 'string' },
  'approval-timeout': { type: 'string' },
  budget: { type: 'string' },
  context: { type: 'string' },
} as const satisfies OptionSpec;

const startHelpLines = [
  '  --model M      scripted (default), local, or provider:model, provider one of openai, anthropic, openai-compatible, local',
  '  --tools LIST   comma-separated tool names registered on the worker (e.g. echo,sleep,emit_context)',
  '  --script S     steps of the scripted model: a JSON array, or a file holding one (implies --model scripted)',
  '  --system TEXT  system prompt',
  '  --labels LIST  comma-separated labels operators filter by (agent-sessions list --label, usage --label)',
  '  --tenant T     the tenant the session belongs to (a-z 0-9 _ -, at most 64; default: none)',
  '  --approvals LIST  tools whose calls wait for `agent-sessions approve|deny` (comma-separated, or * for all)',
  '  --approval-timeout MS  answer a call with no decision after MS milliseconds (APPROVAL_TIMEOUT)',
  '  --budget LIST  spending limits, e.g. modelCalls=20,toolCalls=50,inputTokens=200000,outputTokens=20000; the',
  '                 session waits at a limit for `agent-sessions budget <id> extend|deny` (add stop to end the turn)',
  '  --context LIST token budget of what the model sees, e.g. maxTokens=100000,compactAt=0.8,keepRecent=4: older',
  '                 messages are summarised before a request that would pass compactAt × maxTokens',
];

/** `start`'s options as help lines under a heading (for `schedule create`). */
export const startOptionsHelp = [
  'start options (the config of a session a firing starts):',
  ...startHelpLines,
].join('\n');

export const startCommand: Command = {
  name: 'start',
  summary: 'start a session (the scripted model unless --model says otherwise)',
  usage:
    'agent-sessions start <id> [--model scripted|local|PROVIDER:MODEL] [--tools a,b] [--script FILE|JSON] [--system TEXT] [--labels a,b] [--tenant T] [--approvals a,b|*] [--approval-timeout MS] [--budget LIST] [--context LIST]',
  details: ['options:', ...startHelpLines].join('\n'),
  options: START_OPTIONS,
  connects: true,
  async run(p) {
    const [id] = positionals(p, ['id']);
    const sessionId = sessionIdArg(id);
    const config = configFrom(p);
    return withSessions(p, async (sessions) => {
      try {
        await sessions.start(sessionId, config);
      } catch (err) {
        if (err instanceof WorkflowExecutionAlreadyStartedError)
          throw new CliError(`session ${sessionId} already exists`);
        throw err;
      }
      const model = config.model ? formatModelRef(config.model) : 'scripted';
      out(`started session ${sessionId} (model ${model}; tools ${config.tools?.join(',') || 'none'})`);
      return 0;
    });
  },
};

/** The session config of `start`'s options (also what `schedule create` starts an absent session with). */
export function configFrom(p: Parameters<Command['run']>[0]): SessionConfig {
  const config: SessionConfig = {};
  const model = stringOpt(p, 'model');
  const script = stringOpt(p, 'script');
  if (model !== undefined) config.model = parseModel(model);
  if (script !== undefined) {
    if (config.model && config.model.provider !== 'scripted')
      throw new UsageError('--script needs the scripted model');
    config.model = { provider: 'scripted', steps: parseScript(script) };
  }
  const tools = stringOpt(p, 'tools');
  if (tools !== undefined) config.tools = parseTools(tools);
  const system = stringOpt(p, 'system');
  if (system !== undefined) config.system = system;
  const labels = stringOpt(p, 'labels');
  if (labels !== undefined) config.labels = labels.split(',').map((l) => l.trim());
  const tenant = stringOpt(p, 'tenant');
  if (tenant !== undefined) config.tenant = tenant;
  const approvals = stringOpt(p, 'approvals');
  const timeoutMs = intOpt(p, 'approval-timeout', 1);
  if (timeoutMs !== undefined && approvals === undefined)
    throw new UsageError(
      '--approval-timeout needs --approvals (use --approvals "" to time out only the worker\'s)',
    );
  if (approvals !== undefined)
    config.approvals = {
      tools: approvals.trim() === '*' ? '*' : approvals.trim() ? parseTools(approvals) : [],
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    };
  const budget = stringOpt(p, 'budget');
  if (budget !== undefined) config.budget = parseBudget(budget);
  const context = stringOpt(p, 'context');
  if (context !== undefined) config.context = parseContext(context);
  return config;
}

/** `maxTokens=100000,compactAt=0.8,keepRecent=4` → SessionConfig.context (the client checks the ranges). */
function parseContext(text: string): NonNullable<SessionConfig['context']> {
  const context: Partial<NonNullable<SessionConfig['context']>> = {};
  for (const part of text.split(',').map((x) => x.trim())) {
    const m = /^(maxTokens|compactAt|keepRecent)=(\d+(?:\.\d+)?)$/.exec(part);
    if (!m)
      throw new UsageError(
        `invalid --context "${part}": write maxTokens=N, compactAt=F (a fraction) or keepRecent=N`,
      );
    context[m[1] as 'maxTokens'] = Number(m[2]);
  }
  if (context.maxTokens === undefined) throw new UsageError('invalid --context: maxTokens=N is required');
  return { ...context, maxTokens: context.maxTokens };
}

/** `modelCalls=20,inputTokens=200000[,stop]` → SessionConfig.budget. Throws UsageError naming the bad part. */
function parseBudget(text: string): NonNullable<SessionConfig['budget']> {
  const budget: NonNullable<SessionConfig['budget']> = {};
  for (const part of text.split(',').map((x) => x.trim())) {
    if (part === 'stop' || part === 'ask') {
      budget.onExceeded = part;
      continue;
    }
    const m = /^(modelCalls|toolCalls|inputTokens|outputTokens|costMicros)=(\d+)$/.exec(part);
    if (!m || Number(m[2]) < 1)
      throw new UsageError(
        `invalid --budget "${part}": write LIMIT=N (LIMIT one of modelCalls, toolCalls, inputTokens, outputTokens, costMicros; N at least 1), or stop`,
      );
    budget[m[1] as 'modelCalls'] = Number(m[2]);
  }
  if (!['modelCalls', 'toolCalls', 'inputTokens', 'outputTokens', 'costMicros'].some((k) => k in budget))
    throw new UsageError('invalid --budget: name at least one limit');
  return budget;
}

function parseScript(text: string): ScriptedStep[] {
  let raw: unknown;
  const source = text.trimStart().startsWith('[') ? text : readScriptFile(text);
  try {
    raw = JSON.parse(source);
  } catch (err) {
    throw new UsageError(`invalid --script: not JSON (${(err as Error).message})`);
  }
  const parsed = z.array(ScriptedStepSchema).safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new UsageError(
      `invalid --script: ${issueField(['steps', ...(issue?.path ?? [])])}: ${issue?.message}`,
    );
  }
  return parsed.data;
}

function readScriptFile(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(
      `invalid --script "${file}": ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`,
    );
  }
}
