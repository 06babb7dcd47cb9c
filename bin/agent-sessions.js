#!/usr/bin/env node
'use strict';
// Entry of the `agent-sessions` command: runs the compiled CLI (dist/, built by `npm run build` or on install).
let cli;
try {
  cli = require('../dist/cli/main.js');
} catch (err) {
  if (err && err.code === 'MODULE_NOT_FOUND' && String(err.message).includes('dist/cli/main.js')) {
    console.error('agent-sessions: the CLI is not built yet; run `npm run build` in the project folder');
    process.exit(1);
  }
  throw err;
}
cli.main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    console.error(`agent-sessions: ${err && err.message ? err.message : err}`);
    process.exitCode = 1;
  },
);
