/**
 * What every chaos scenario gets and returns: its own dev server on a fresh SQLite file (loopback only), a Temporal
 * client to it, a random generator forked from the run's seed, and a report with its figures and the promises it
 * found broken. Not deterministic.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { ChaosServer, note } from './infra';
import type { Rng } from './rng';

export interface ScenarioReport {
  scenario: string;
  durationMs: number;
  /** Promises the run found broken, one sentence each; empty when the scenario passed. */
  broken: string[];
  figures: Record<string, unknown>;
}

export interface ScenarioEnv {
  root: string;
  rng: Rng;
  server: ChaosServer;
  /** A client whose connection survives server restarts (it reconnects). */
  client: Client;
  connection: Connection;
}

/**
 * Runs `body` against a fresh dev server and always stops the server and closes the connection. The data folder
 * (the SQLite file) is removed when the scenario passed and kept, its path printed, when it found a broken promise,
 * so its histories can be read afterwards (`temporal server start-dev --db-filename …`).
 */
export async function withScenarioEnv(
  name: string,
  root: string,
  rng: Rng,
  body: (env: ScenarioEnv) => Promise<Omit<ScenarioReport, 'scenario' | 'durationMs'>>,
): Promise<ScenarioReport> {
  const started = Date.now();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), `agent-sessions-chaos-${name}-`));
  note(`${name}: starting (data in ${dataDir})`);
  const server = await ChaosServer.start(dataDir);
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection });
  let report: ScenarioReport;
  try {
    const result = await body({ root, rng, server, client, connection });
    report = { scenario: name, durationMs: Date.now() - started, ...result };
  } catch (err) {
    note(`${name}: failed: ${(err as Error).stack ?? String(err)}`);
    report = {
      scenario: name,
      durationMs: Date.now() - started,
      broken: [`the scenario itself failed: ${(err as Error).message}`],
      figures: {},
    };
  }
  await connection.close().catch(() => undefined);
  await server.stop().catch(() => undefined);
  if (report.broken.length === 0) rmSync(dataDir, { recursive: true, force: true });
  else report.figures.keptData = dataDir;
  note(
    `${name}: done in ${Math.round(report.durationMs / 1000)} s, ${report.broken.length} broken promise(s)` +
      (report.broken.length ? `; data kept in ${dataDir}` : ''),
  );
  return report;
}
