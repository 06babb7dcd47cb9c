/**
 * PostgreSQL 15 of the cluster: finding (or, as root, installing) it, its folder by the data-folder rule
 * (dataFolder.ts), starting, stopping and restarting it, queries as its admin, and the Temporal schemas. PostgreSQL
 * refuses to run as root: as root it runs as the `postgres` user, otherwise as the caller. Not deterministic.
 */
import {
  appendFileSync,
  chmodSync,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { moduleDir } from './build';
import { deletedByDown, pgLocation, type PgLocation } from './dataFolder';
import { HOST, POSTGRES_MAJOR, type Settings } from './plan';
import {
  asPg,
  ClusterError,
  elapsed,
  failIfPortBusy,
  isExecutable,
  isRoot,
  run,
  say,
  tail,
  which,
} from './proc';

/** An installed PostgreSQL, the user it runs as, and its folder. */
export interface Pg {
  s: Settings;
  bin: string;
  user: string;
  loc: PgLocation;
}

/** The folder of initdb and pg_ctl: AGENT_SESSIONS_PG_BIN, Debian's folder, then PATH (if its version is 15). */
async function findBin(s: Settings): Promise<string | undefined> {
  for (const dir of [s.env.AGENT_SESSIONS_PG_BIN, `/usr/lib/postgresql/${POSTGRES_MAJOR}/bin`]) {
    if (dir && isExecutable(path.join(dir, 'initdb')) && isExecutable(path.join(dir, 'pg_ctl'))) return dir;
  }
  const pgCtl = which('pg_ctl');
  if (pgCtl && new RegExp(` ${POSTGRES_MAJOR}(\\.|$)`, 'm').test((await run(pgCtl, ['--version'])).stdout))
    return path.dirname(pgCtl);
  return undefined;
}

async function install(s: Settings): Promise<string> {
  if (!isRoot() || !which('apt-get'))
    throw new ClusterError(
      `PostgreSQL ${POSTGRES_MAJOR} not found: install it (Debian: apt-get install postgresql) or set AGENT_SESSIONS_PG_BIN`,
    );
  say(`installing Debian's postgresql (PostgreSQL ${POSTGRES_MAJOR}) with apt-get`);
  // The package would create and start a cluster of its own on port 5432; this one is not wanted.
  if (!existsSync('/etc/postgresql-common/createcluster.conf')) {
    mkdirSync('/etc/postgresql-common', { recursive: true });
    writeFileSync('/etc/postgresql-common/createcluster.conf', 'create_main_cluster = false\n');
  }
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  await run('apt-get', ['update', '-qq'], { env, stdout: 'inherit', stderr: 'inherit' });
  const args = ['install', '-y', '-qq', '-o', 'Dpkg::Options::=--force-confold', 'postgresql'];
  if ((await run('apt-get', args, { env, stdout: 'ignore', stderr: 'inherit' })).code !== 0)
    throw new ClusterError('apt-get install postgresql failed');
  const bin = await findBin(s);
  if (!bin)
    throw new ClusterError(
      `apt-get installed postgresql but no PostgreSQL ${POSTGRES_MAJOR} initdb/pg_ctl was found`,
    );
  return bin;
}

async function pgUser(): Promise<string> {
  if (!isRoot()) return os.userInfo().username;
  if ((await run('id', ['postgres'])).code !== 0)
    throw new ClusterError(
      'PostgreSQL runs as the user postgres, which does not exist (useradd --system postgres)',
    );
  return 'postgres';
}

/** PostgreSQL's folder by the data-folder rule. */
async function locate(s: Settings): Promise<PgLocation> {
  const link = path.join(s.dir, 'postgres');
  const target = lstatSync(link, { throwIfNoEntry: false })?.isSymbolicLink()
    ? readlinkSync(link)
    : undefined;
  const runsAsRoot = isRoot();
  const pgCanEnterStateDir =
    !runsAsRoot || target !== undefined || (await asPg('test', ['-x', s.dir])).code === 0;
  return pgLocation(s.dir, { link: target, runsAsRoot, pgCanEnterStateDir });
}

/** The installed PostgreSQL and its folder, or undefined when PostgreSQL 15 is not installed. */
export async function findPostgres(s: Settings): Promise<Pg | undefined> {
  const bin = await findBin(s);
  if (!bin) return undefined;
  return { s, bin, user: await pgUser(), loc: await locate(s) };
}

/** psql as the admin over the Unix socket, on database `db`. */
export function psql(pg: Pg, db: string, args: string[]) {
  return asPg(path.join(pg.bin, 'psql'), [
    ...['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-h', pg.loc.socket, '-p', String(pg.s.plan.postgres)],
    ...['-U', pg.user, '-d', db, ...args],
  ]);
}

/** One value (unaligned, tuples only), or undefined when the query fails. */
export async function query(pg: Pg, db: string, sql: string): Promise<string | undefined> {
  const ran = await psql(pg, db, ['-tAc', sql]);
  return ran.code === 0 ? ran.stdout.trim() : undefined;
}

export async function pgRunning(pg: Pg): Promise<boolean> {
  return (
    existsSync(path.join(pg.loc.data, 'PG_VERSION')) &&
    (await asPg(path.join(pg.bin, 'pg_ctl'), ['-D', pg.loc.data, 'status'])).code === 0
  );
}

/** Fails naming the first folder above `dir` that PostgreSQL's user cannot enter. */
async function checkCanReach(pg: Pg, dir: string): Promise<void> {
  if ((await asPg('test', ['-w', dir, '-a', '-x', dir])).code === 0) return;
  let part = '';
  for (const segment of dir.split('/').filter(Boolean)) {
    part += `/${segment}`;
    if ((await asPg('test', ['-x', part])).code !== 0)
      throw new ClusterError(
        `PostgreSQL runs as ${pg.user}, which cannot enter ${part}; put the cluster elsewhere with AGENT_SESSIONS_CLUSTER_DIR`,
      );
  }
  throw new ClusterError(`PostgreSQL runs as ${pg.user}, which cannot write ${dir}`);
}

/**
 * The folder outside the state folder, at the first `up` of this state folder: a PostgreSQL still running from it
 * (its state folder was deleted without `down`) is adopted; stopped data left there is an orphan of an earlier
 * state folder at the same path, and is deleted so a fresh state folder starts a fresh cluster.
 */
async function prepareOutside(pg: Pg): Promise<void> {
  const link = path.join(pg.s.dir, 'postgres');
  const stat = lstatSync(link, { throwIfNoEntry: false });
  if (stat?.isSymbolicLink()) return;
  if (stat)
    throw new ClusterError(
      `${link} holds PostgreSQL data that ${pg.user} cannot reach from here; delete ${pg.s.dir} (a fresh cluster) or move it back`,
    );
  if (existsSync(pg.loc.dir) && !(await pgRunning(pg))) {
    say(`postgres: deleting ${pg.loc.dir} (left by an earlier state folder at ${pg.s.dir})`);
    rmSync(pg.loc.dir, { recursive: true, force: true });
  }
  mkdirSync(pg.loc.dir, { recursive: true });
  writeFileSync(
    path.join(pg.loc.dir, 'README'),
    `PostgreSQL of the Temporal cluster of scripts/cluster.sh with the state folder ${pg.s.dir}; deleted by its down\n`,
  );
  symlinkSync(pg.loc.dir, link);
  say(
    `postgres: ${pg.user} cannot enter ${pg.s.dir}: its data lives in ${pg.loc.dir} (linked as ${link}; deleted by down)`,
  );
}

/** Installs if needed, initdb once, writes its settings, starts it unless it runs, creates the role `temporal`. */
export async function postgresUp(s: Settings): Promise<Pg> {
  const bin = (await findBin(s)) ?? (await install(s));
  const user = await pgUser();
  mkdirSync(s.dir, { recursive: true });
  // The PostgreSQL user must be able to enter the state folder (enter only: o+x), also when umask is strict. Only
  // folders inside the clone are changed; whether the folders above let it in decides where the data goes.
  if (!s.dirFromEnv) {
    const data = path.join(s.root, '.data');
    chmodSync(data, (statSync(data).mode & 0o7777) | 0o001);
  }
  chmodSync(s.dir, 0o755);
  const pg: Pg = { s, bin, user, loc: await locate(s) };
  const { loc } = pg;
  if (loc.outside) await prepareOutside(pg);
  mkdirSync(loc.socket, { recursive: true });
  if (isRoot()) await run('chown', [user, loc.dir, loc.socket]);
  chmodSync(loc.dir, 0o700);
  await checkCanReach(pg, loc.dir);
  if (!existsSync(path.join(loc.data, 'PG_VERSION'))) {
    say(`postgres: initdb ${loc.data} (as ${user})`);
    rmSync(loc.data, { recursive: true, force: true });
    const initdb = await asPg(path.join(bin, 'initdb'), [
      ...['-D', loc.data, '-U', user, '-E', 'UTF8', '--locale=C.UTF-8'],
      ...['--auth-local=peer', '--auth-host=scram-sha-256'],
    ]);
    writeFileSync(path.join(loc.dir, 'initdb.log'), initdb.stdout + initdb.stderr);
    if (initdb.code !== 0) {
      process.stderr.write(initdb.stdout + initdb.stderr);
      throw new ClusterError('initdb failed');
    }
    appendFileSync(path.join(loc.data, 'postgresql.conf'), "include_if_exists = 'agent-sessions.conf'\n");
  }
  // Rewritten on every `up`, so a changed port offset applies at the next start. Written as PostgreSQL's user.
  await asPg('tee', [path.join(loc.data, 'agent-sessions.conf')], {
    stdout: 'ignore',
    input: [
      '# Written by scripts/cluster.sh (rewritten on every up).',
      `port = ${s.plan.postgres}`,
      `listen_addresses = '${HOST}'`,
      `unix_socket_directories = '${loc.socket}'`,
      "# 4 services hold up to 4 x (20 + 2) connections with the server's development pool sizes; room for tools.",
      'max_connections = 200',
      '',
    ].join('\n'),
  });
  if (await pgRunning(pg)) say(`postgres: running (port ${s.plan.postgres})`);
  else {
    await failIfPortBusy(s.plan.postgres, 'postgres');
    const start = Date.now();
    const args = ['-D', loc.data, '-l', loc.log, '-w', '-t', '60', 'start'];
    if ((await asPg(path.join(bin, 'pg_ctl'), args, { stdout: 'ignore', stderr: 'inherit' })).code !== 0) {
      process.stderr.write(tail(loc.log, 20));
      throw new ClusterError(`PostgreSQL did not start (log: ${loc.log})`);
    }
    say(`postgres: started on ${HOST}:${s.plan.postgres} in ${elapsed(start)}`);
  }
  if ((await query(pg, 'postgres', "SELECT 1 FROM pg_roles WHERE rolname = 'temporal'")) !== '1') {
    const created = await psql(pg, 'postgres', [
      '-c',
      "CREATE ROLE temporal LOGIN CREATEDB PASSWORD 'temporal'",
    ]);
    if (created.code !== 0)
      throw new ClusterError(`could not create the role temporal: ${created.stderr.trim()}`);
    say('postgres: created role temporal');
  }
  return pg;
}

/**
 * Stops PostgreSQL (`pg_ctl stop -m fast`) and applies the data-folder rule: a folder outside the state folder lasts
 * from `up` to `down` (its log is kept in logs/). Returns what happened to the data, for `down`'s last line.
 */
export async function postgresDown(pg: Pg): Promise<string> {
  const { s, loc } = pg;
  if (await pgRunning(pg)) {
    await asPg(path.join(pg.bin, 'pg_ctl'), ['-D', loc.data, '-m', 'fast', '-w', 'stop'], {
      stdout: 'ignore',
      stderr: 'inherit',
    });
    say('postgres: stopped');
  }
  if (deletedByDown(loc) && existsSync(loc.dir)) {
    if (existsSync(loc.log)) {
      mkdirSync(s.logdir, { recursive: true });
      copyFileSync(loc.log, path.join(s.logdir, 'postgres.log'));
    }
    rmSync(loc.dir, { recursive: true, force: true });
    rmSync(path.join(s.dir, 'postgres'), { force: true });
    say(
      `postgres: deleted ${loc.dir} (PostgreSQL's data outside the state folder; its log is in ${path.join(s.logdir, 'postgres.log')})`,
    );
    return `the cluster's data was deleted with ${loc.dir}`;
  }
  if (loc.outside) return `no cluster data: PostgreSQL's folder ${loc.dir} does not exist`;
  return `data kept in ${s.dir}; delete that folder for a fresh cluster`;
}

/** `pg_ctl restart -m immediate` (fault tests). */
export async function restartPostgres(pg: Pg): Promise<void> {
  if (!(await pgRunning(pg))) throw new ClusterError('postgres is not running');
  const start = Date.now();
  const args = ['-D', pg.loc.data, '-l', pg.loc.log, '-m', 'immediate', '-w', '-t', '60', 'restart'];
  if ((await asPg(path.join(pg.bin, 'pg_ctl'), args, { stdout: 'ignore', stderr: 'inherit' })).code !== 0)
    throw new ClusterError(`pg_ctl restart failed (log: ${pg.loc.log})`);
  say(`postgres: restarted with -m immediate (${elapsed(start)})`);
}

/**
 * The Temporal schemas of both databases with the schema tool. Every step is a no-op when done: create is silent
 * when the database exists, setup-schema skips an existing schema, update-schema does nothing when current.
 */
export async function schemaUp(pg: Pg): Promise<void> {
  const { s } = pg;
  const module = await moduleDir(s);
  const log = path.join(s.logdir, 'schema.log');
  const start = Date.now();
  mkdirSync(s.logdir, { recursive: true });
  writeFileSync(log, '');
  const env = {
    ...process.env,
    ...{ SQL_PLUGIN: 'postgres12', SQL_HOST: HOST, SQL_PORT: String(s.plan.postgres) },
    ...{ SQL_USER: 'temporal', SQL_PASSWORD: 'temporal' },
  };
  for (const [db, folder] of [
    ['temporal', 'temporal'],
    ['temporal_visibility', 'visibility'],
  ] as const) {
    const versioned = path.join(module, 'schema/postgresql/v12', folder, 'versioned');
    for (const step of [['create'], ['setup-schema', '-v', '0.0'], ['update-schema', '-d', versioned]]) {
      const ran = await run(s.sqlBin, ['--db', db, ...step], { env });
      appendFileSync(log, ran.stdout + ran.stderr);
      if (ran.code !== 0) {
        process.stderr.write(tail(log, 20));
        throw new ClusterError(`schema step '${step[0]}' of ${db} failed (log: ${log})`);
      }
    }
  }
  const version = async (db: string) =>
    (await query(pg, db, 'SELECT curr_version FROM schema_version LIMIT 1')) || '?';
  say(
    `schema: temporal ${await version('temporal')}, temporal_visibility ${await version('temporal_visibility')} (${elapsed(start)})`,
  );
}
