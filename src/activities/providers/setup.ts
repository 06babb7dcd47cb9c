/** How each model provider is turned on in a worker's environment (for "not configured" errors). Pure. */
export const PROVIDER_SETUP: Record<string, string> = {
  openai: 'set OPENAI_API_KEY (and optionally OPENAI_BASE_URL) on the worker',
  anthropic: 'set ANTHROPIC_API_KEY (and optionally ANTHROPIC_BASE_URL) on the worker',
  'openai-compatible':
    'set OPENAI_COMPATIBLE_BASE_URL (and optionally OPENAI_COMPATIBLE_API_KEY) on the worker',
  local:
    'a worker configured from its environment has it: run `npm run setup` (installs the default GGUF into .venv/models) or set LOCAL_MODEL_PATH',
  scripted: 'always available',
};
