#!/usr/bin/env node
/* global require, __dirname */
/* eslint-disable @typescript-eslint/no-require-imports -- a CommonJS script, like bin/ */
'use strict';
// `npm run build`, last: copies the viewer's page (src/viewer/page: HTML, the Preact + htm module, CSS; no build
// step of its own) beside the compiled server, dist/viewer/page, where `agent-sessions ui` serves it from.
const { cpSync, rmSync } = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const to = path.join(root, 'dist', 'viewer', 'page');
rmSync(to, { recursive: true, force: true });
cpSync(path.join(root, 'src', 'viewer', 'page'), to, { recursive: true });
