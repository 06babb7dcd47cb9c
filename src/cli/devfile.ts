/**
 * The address file of a running `agent-sessions dev`: `<data dir>/dev-server.json` holds the embedded server's
 * address, namespace and task queue while `dev` runs, so client commands in another terminal find it without
 * TEMPORAL_ADDRESS. Written at start, removed on exit; a file whose process is gone is ignored.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const DEV_FILE = 'dev-server.json';

/** The embedded dev server listens here when the port is free, so other tools find it without flags. */
export const PREFERRED_PORT = 7233;

export interface DevFile {
  address: string;
  namespace: string;
  taskQueue: string;
  pid: number;
  session: string;
}

export function devFilePath(dataDir: string): string {
  return path.resolve(dataDir, DEV_FILE);
}

export function writeDevFile(dataDir: string, info: DevFile): void {
  writeFileSync(devFilePath(dataDir), `${JSON.stringify(info, null, 2)}\n`);
}

export function removeDevFile(dataDir: string, pid = process.pid): void {
  if (readDevFile(dataDir, { alive: false })?.pid === pid) rmSync(devFilePath(dataDir), { force: true });
}

/** The address file of a `dev` process that is still alive (or any, with `alive: false`). */
export function readDevFile(dataDir: string, opts: { alive?: boolean } = {}): DevFile | undefined {
  let info: DevFile;
  try {
    info = JSON.parse(readFileSync(devFilePath(dataDir), 'utf8')) as DevFile;
  } catch {
    return undefined;
  }
  if (typeof info.address !== 'string' || typeof info.pid !== 'number') return undefined;
  if (opts.alive !== false && !isAlive(info.pid)) return undefined;
  return info;
}

/** Whether a process with this pid exists (one we may not signal counts too). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
