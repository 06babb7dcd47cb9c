#!/usr/bin/env node
/* global require, process, console, __dirname, setTimeout */
/* eslint-disable @typescript-eslint/no-require-imports -- a CommonJS script, like bin/ */
'use strict';
// `npm run ui:screenshots`: what an operator sees of a session in the real Temporal UI, as PNG files in
// docs/images/. Starts the dev server with its UI (the `temporal` CLI that `npm run setup` installs), a session worker
// from dist/ and a session that calls a tool, answers, and then waits on a slow tool with a follow-up queued; then
// opens the UI's workflow list, the session's page and its "User Metadata" tab in headless Chromium (Playwright's
// driver, playwright-core, with the machine's Chromium: CHROMIUM_PATH, default /usr/bin/chromium — Debian's package
// `chromium`) and writes a screenshot of each. Needs `npm run build` first.
const { existsSync, mkdirSync } = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const outDir = path.join(root, 'docs', 'images');
const chromiumPath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const UI_PORT = Number(process.env.UI_PORT || 18233);

async function main() {
  if (!existsSync(path.join(root, 'dist', 'index.js'))) throw new Error('run `npm run build` first');
  if (!existsSync(chromiumPath))
    throw new Error(`no Chromium at ${chromiumPath}: install Debian's chromium or set CHROMIUM_PATH`);
  const { chromium } = require('playwright-core');
  const { NativeConnection } = require('@temporalio/worker');
  const { Connection } = require('@temporalio/client');
  const { spawnDevServer } = require('../dist/devserver');
  const { createSessionWorker } = require('../dist/worker');
  const { SessionClient } = require('../dist/client');
  const { testingTools } = require('../dist/activities/testingTools');

  const server = await spawnDevServer({ inMemory: true, uiPort: UI_PORT });
  const native = await NativeConnection.connect({ address: server.address });
  const worker = await createSessionWorker({ connection: native, taskQueue: 'ui', tools: testingTools });
  const running = worker.run();
  const connection = await Connection.connect({ address: server.address });
  const sessions = new SessionClient({ connection, taskQueue: 'ui' });
  const browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
  try {
    const id = 'support-bot-42';
    await sessions.start(id, {
      labels: ['team-support', 'tier=gold'],
      tools: ['echo', 'sleep'],
      model: {
        provider: 'scripted',
        steps: [
          {
            toolCalls: [{ name: 'echo', args: { text: 'order 1234' } }],
            usage: { inputTokens: 812, outputTokens: 40 },
          },
          { text: 'Your order ships tomorrow.', usage: { inputTokens: 901, outputTokens: 12 } },
          {
            toolCalls: [{ name: 'sleep', args: { ms: 600_000 } }],
            usage: { inputTokens: 950, outputTokens: 20 },
          },
        ],
      },
    });
    await sessions.ask(id, 'Where is my order?');
    await sessions.followup(id, 'And the invoice?');
    await new Promise((resolve) => setTimeout(resolve, 3000));
    await sessions.followup(id, 'A question that waits for the next turn');
    await new Promise((resolve) => setTimeout(resolve, 1000));

    mkdirSync(outDir, { recursive: true });
    const page = await browser.newPage({ viewport: { width: 1500, height: 1200 } });
    const ui = `http://127.0.0.1:${UI_PORT}/namespaces/default/workflows`;
    const shots = [
      ['temporal-ui-list.png', ui, undefined],
      ['temporal-ui-session.png', `${ui}/${id}`, undefined],
      ['temporal-ui-session-metadata.png', `${ui}/${id}`, 'User Metadata'],
    ];
    for (const [file, url, tab] of shots) {
      // A tab of the page already open is a click (the session page keeps polling: it never goes network-idle).
      if (tab) await page.getByText(tab, { exact: true }).click();
      else await page.goto(url, { waitUntil: 'load', timeout: 60_000 });
      await page.waitForTimeout(4000);
      await page.screenshot({ path: path.join(outDir, file), fullPage: true });
      console.log(`ui screenshot: ${path.relative(process.cwd(), path.join(outDir, file))} (${url})`);
    }
  } finally {
    await browser.close();
    worker.shutdown();
    await running;
    await connection.close();
    await native.close();
    await server.stop();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(`ui screenshots: ${err && err.message ? err.message : err}`);
    process.exit(1);
  },
);
