#!/usr/bin/env node
'use strict';
/* global setTimeout */
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
// A command that failed has said why; whatever it left open (a connection, telemetry) must not keep the process
// alive. The timer does not hold the process itself, so a clean exit comes first and output is flushed.
const failed = (code) => {
  process.exitCode = code;
  setTimeout(() => process.exit(code), 1000).unref();
};
cli.main(process.argv.slice(2)).then(
  (code) => {
    if (code === 0) process.exitCode = 0;
    else failed(code);
  },
  (err) => {
    console.error(`agent-sessions: ${err && err.message ? err.message : err}`);
    failed(1);
  },
);
