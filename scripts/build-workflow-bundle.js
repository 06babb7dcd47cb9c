#!/usr/bin/env node
/* global require, process, console */
/* eslint-disable @typescript-eslint/no-require-imports -- a CommonJS script, like bin/ */
'use strict';
// `npm run build`, after tsc: bundles the compiled workflow code (dist/workflows, with the workflow interceptor
// modules) into dist/workflow-bundle.js, which workers started from dist/ load instead of running webpack at every
// start (src/worker/bundle.ts), and the same with Temporal's OpenTelemetry workflow interceptors into
// dist/workflow-bundle-traced.js, for workers that trace (src/worker/telemetry.ts). Quiet: webpack's report is not
// printed; its errors are, and fail the build.
const { writeFileSync, renameSync } = require('node:fs');
const path = require('node:path');

const started = Date.now();
const {
  bundleWorkflows,
  PREBUILT_WORKFLOW_BUNDLE,
  PREBUILT_TRACED_WORKFLOW_BUNDLE,
} = require('../dist/worker/bundle.js');
const { OTEL_WORKFLOW_INTERCEPTORS } = require('../dist/worker/telemetry.js');

/** Bundles and writes one bundle: write then rename, so a worker starting meanwhile never reads half of it. */
async function build(file, options) {
  const { code } = await bundleWorkflows(options);
  const partial = `${file}.${process.pid}.tmp`;
  writeFileSync(partial, code);
  renameSync(partial, file);
  const size = (code.length / 1024 / 1024).toFixed(2);
  console.log(
    `workflow bundle: ${path.relative(process.cwd(), file)} (${size} MB, ${Date.now() - started} ms)`,
  );
}

build(PREBUILT_WORKFLOW_BUNDLE, {})
  .then(() =>
    build(PREBUILT_TRACED_WORKFLOW_BUNDLE, { workflowInterceptorModules: [OTEL_WORKFLOW_INTERCEPTORS] }),
  )
  .then(
    () => undefined,
    (err) => {
      console.error(`workflow bundle: ${err && err.message ? err.message : err}`);
      process.exit(1);
    },
  );
