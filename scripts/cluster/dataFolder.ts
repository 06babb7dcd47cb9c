/**
 * The data-folder rule (docs/operations.md): where PostgreSQL keeps its data, socket and log. Pure: the facts it
 * depends on (a symlink already there, running as root, whether the postgres user can enter the state folder) are
 * passed in.
 *
 * - `<state>/postgres` when PostgreSQL's user can enter the state folder: always when it runs as the caller; as
 *   root, when every folder above the state folder lets the postgres user in (e.g. a clone under /tmp or /work);
 * - otherwise (as root, a clone under /root, mode 700: the tool never changes the modes of folders outside the
 *   clone) `/var/tmp/agent-sessions-pg-<12 hex of sha256 of the state folder's path>`: one per state folder, so
 *   clones do not share data, owned by postgres, mode 700. The symlink `<state>/postgres` records it, and `down`
 *   deletes it (it would outlive the clone otherwise): there, the cluster's data lasts from `up` to `down`.
 *
 * The symlink, once there, decides for every later command.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';

export const OUTSIDE_PREFIX = '/var/tmp/agent-sessions-pg-';

export interface PgLocation {
  /** PostgreSQL's folder: data/, socket/, postgres.log. */
  dir: string;
  data: string;
  socket: string;
  log: string;
  /** The folder is outside the state folder (linked as `<state>/postgres`). */
  outside: boolean;
}

export interface PgFacts {
  /** The target of the symlink `<state>/postgres`, when that path is a symlink. */
  link: string | undefined;
  runsAsRoot: boolean;
  /** Whether the postgres user can enter the state folder (matters only as root, without a symlink). */
  pgCanEnterStateDir: boolean;
}

/** The folder outside the state folder for `stateDir`: one per path. */
export function outsideFolder(stateDir: string): string {
  return OUTSIDE_PREFIX + createHash('sha256').update(stateDir).digest('hex').slice(0, 12);
}

export function pgLocation(stateDir: string, facts: PgFacts): PgLocation {
  let dir: string;
  let outside = true;
  if (facts.link !== undefined) dir = facts.link;
  else if (facts.runsAsRoot && !facts.pgCanEnterStateDir) dir = outsideFolder(stateDir);
  else {
    dir = path.join(stateDir, 'postgres');
    outside = false;
  }
  return {
    dir,
    data: path.join(dir, 'data'),
    socket: path.join(dir, 'socket'),
    log: path.join(dir, 'postgres.log'),
    outside,
  };
}

/** `down` deletes PostgreSQL's folder only when it is outside the state folder and one of the tool's own. */
export function deletedByDown(location: PgLocation): boolean {
  return location.outside && location.dir.startsWith(OUTSIDE_PREFIX);
}
