/**
 * What the cluster is, as data: the versions, the port plan, the namespace and search attributes, the folders, and
 * the `env` lines (test/unit/compose.test.ts checks docker-compose.yml against them). Pure: reads only the
 * environment object it is given. The namespace, the search attributes and the frontend's standard port come from
 * the constants the project's code uses, so the cluster registers exactly what the client and worker expect.
 */
import os from 'node:os';
import path from 'node:path';
import { PREFERRED_PORT } from '../../src/cli/devfile';
import { SEARCH_ATTRIBUTE_FLAGS } from '../../src/contract/searchAttributes';
import { DEFAULT_NAMESPACE } from '../../src/worker/config';
import { UsageError } from './proc';

export const TEMPORAL_SERVER_VERSION = '1.32.0';
export const POSTGRES_MAJOR = '15';
export const NAMESPACE = DEFAULT_NAMESPACE;
export const NAMESPACE_RETENTION = '168h';
/** `Name=Type` in the code's order (SEARCH_ATTRIBUTE_FLAGS); docker-compose.yml's namespace job registers the same. */
export const PROJECT_SEARCH_ATTRIBUTES: readonly string[] = SEARCH_ATTRIBUTE_FLAGS;
export const HOST = '127.0.0.1';
export const DEFAULT_PORT_OFFSET = 10_000;
export const MAX_PORT_OFFSET = 50_000;

/** The four Temporal services, each its own process, with their membership role numbers. */
export const SERVICES = ['frontend', 'history', 'matching', 'worker'] as const;
export type Service = (typeof SERVICES)[number];
export const ROLE: Record<Service, number> = { frontend: 1, history: 2, matching: 3, worker: 4 };
/**
 * A process of the cluster: a service, or the optional TLS frontend (`tls-frontend start`), a fifth process of role
 * frontend on the ports Temporal's docs give the internal-frontend (which this cluster does not run).
 */
export type ClusterProcess = Service | 'frontend-tls';
export const PROCESSES: readonly ClusterProcess[] = [...SERVICES, 'frontend-tls'];

export interface ProcessPorts {
  grpc: number;
  membership: number;
  pprof: number;
  metrics: number;
}

/**
 * Temporal's standard ports (its development configs; the frontend's is the dev server's PREFERRED_PORT), plus one
 * pprof and metrics port per process: on one host the processes cannot share the configs' single ones.
 */
const STANDARD: Record<ClusterProcess, ProcessPorts> = {
  frontend: { grpc: PREFERRED_PORT, membership: 6933, pprof: 7936, metrics: 8000 },
  history: { grpc: 7234, membership: 6934, pprof: 7937, metrics: 8001 },
  matching: { grpc: 7235, membership: 6935, pprof: 7938, metrics: 8002 },
  worker: { grpc: 7239, membership: 6939, pprof: 7939, metrics: 8003 },
  'frontend-tls': { grpc: 7236, membership: 6936, pprof: 7940, metrics: 8004 },
};
const STANDARD_HTTP = 7243;
const STANDARD_TLS_HTTP = 7246;
const STANDARD_POSTGRES = 5432;

export interface PortPlan {
  offset: number;
  processes: Record<ClusterProcess, ProcessPorts>;
  /** The frontend's HTTP API. */
  http: number;
  /** The TLS frontend's HTTP API. */
  tlsHttp: number;
  postgres: number;
}

/**
 * AGENT_SESSIONS_CLUSTER_PORT_OFFSET: digits only, 0 to 50000 (every port stays below 65536); unset or empty is the
 * default. Throws a UsageError otherwise.
 */
export function parseOffset(raw: string | undefined): number {
  if (raw === undefined || raw === '') return DEFAULT_PORT_OFFSET;
  const offset = /^[0-9]+$/.test(raw) ? Number(raw) : NaN;
  if (!(offset <= MAX_PORT_OFFSET))
    throw new UsageError(`AGENT_SESSIONS_CLUSTER_PORT_OFFSET must be a number from 0 to ${MAX_PORT_OFFSET}`);
  return offset;
}

/** Every port moved by `offset`: the default 10000 keeps clear of a dev server on 7233 and of the OS's ephemeral ports. */
export function portPlan(offset: number): PortPlan {
  const move = (p: ProcessPorts): ProcessPorts => ({
    grpc: p.grpc + offset,
    membership: p.membership + offset,
    pprof: p.pprof + offset,
    metrics: p.metrics + offset,
  });
  const processes = Object.fromEntries(PROCESSES.map((p) => [p, move(STANDARD[p])])) as PortPlan['processes'];
  return {
    offset,
    processes,
    http: STANDARD_HTTP + offset,
    tlsHttp: STANDARD_TLS_HTTP + offset,
    postgres: STANDARD_POSTGRES + offset,
  };
}

/** Every port the plan uses, for checking that none is used twice. */
export function allPorts(plan: PortPlan): number[] {
  return [
    ...Object.values(plan.processes).flatMap((p) => [p.grpc, p.membership, p.pprof, p.metrics]),
    plan.http,
    plan.tlsHttp,
    plan.postgres,
  ];
}

/** One run's settings: the plan and the folders, from the environment (docs/operations.md lists the knobs). */
export interface Settings {
  root: string;
  env: NodeJS.ProcessEnv;
  plan: PortPlan;
  /** The plain frontend, host:port. */
  address: string;
  /** The TLS frontend, host:port. */
  tlsAddress: string;
  /** The state folder: PostgreSQL data (see dataFolder.ts), config, logs, pid files. */
  dir: string;
  /** Whether AGENT_SESSIONS_CLUSTER_DIR set the state folder (then `up` opens no folder of the clone). */
  dirFromEnv: boolean;
  confdir: string;
  logdir: string;
  rundir: string;
  /** GOPATH of the build, in the cache outside the clone (shared by every clone on the machine). */
  gopath: string;
  bindir: string;
  serverBin: string;
  sqlBin: string;
  dynamicConfig: string;
}

/** Throws a UsageError for a bad port offset. */
export function settingsFrom(env: NodeJS.ProcessEnv, root: string): Settings {
  const plan = portPlan(parseOffset(env.AGENT_SESSIONS_CLUSTER_PORT_OFFSET));
  const cache = env.AGENT_SESSIONS_CACHE || path.join(env.HOME || os.homedir(), '.cache/agent-sessions');
  const gopath = path.join(cache, 'go');
  const bindir = path.join(gopath, 'bin', `temporal-server-${TEMPORAL_SERVER_VERSION}`);
  const dir = path.resolve(env.AGENT_SESSIONS_CLUSTER_DIR || path.join(root, '.data/cluster'));
  return {
    root,
    env,
    plan,
    address: `${HOST}:${plan.processes.frontend.grpc}`,
    tlsAddress: `${HOST}:${plan.processes['frontend-tls'].grpc}`,
    dir,
    dirFromEnv: Boolean(env.AGENT_SESSIONS_CLUSTER_DIR),
    confdir: path.join(dir, 'config'),
    logdir: path.join(dir, 'logs'),
    rundir: path.join(dir, 'run'),
    gopath,
    bindir,
    serverBin: path.join(bindir, 'temporal-server'),
    sqlBin: path.join(bindir, 'temporal-sql-tool'),
    dynamicConfig: path.join(root, 'scripts/cluster/dynamicconfig.yaml'),
  };
}

/** The search attributes `up` registers: the project's, then AGENT_SESSIONS_CLUSTER_SEARCH_ATTRIBUTES ("Name=Type,..."). */
export function searchAttributes(s: Settings): { name: string; type: string }[] {
  const entries = [
    ...PROJECT_SEARCH_ATTRIBUTES,
    ...(s.env.AGENT_SESSIONS_CLUSTER_SEARCH_ATTRIBUTES ?? '').split(','),
  ];
  return entries
    .filter((entry) => entry.trim() !== '')
    .map((entry) => {
      const at = entry.indexOf('=');
      const [name, type] = at < 0 ? [entry, ''] : [entry.slice(0, at), entry.slice(at + 1)];
      if (!/^[A-Za-z][A-Za-z0-9_]*$/.test(name) || type === '')
        throw new UsageError(`bad search attribute '${name}=${type}' (want Name=Type)`);
      return { name, type };
    });
}

/** Seconds `up` waits for the cluster to serve (AGENT_SESSIONS_CLUSTER_READY_TIMEOUT, default 120). */
export function readyTimeoutSeconds(s: Settings): number {
  const raw = s.env.AGENT_SESSIONS_CLUSTER_READY_TIMEOUT;
  if (raw === undefined || raw === '') return 120;
  if (!/^[0-9]+$/.test(raw))
    throw new UsageError('AGENT_SESSIONS_CLUSTER_READY_TIMEOUT must be a whole number of seconds');
  return Number(raw);
}

/** `scripts/cluster.sh env`: the address, ports and versions as KEY=VALUE lines, in this order. */
export function envLines(s: Settings): string[] {
  const p = s.plan.processes;
  return [
    `TEMPORAL_ADDRESS=${s.address}`,
    `TEMPORAL_NAMESPACE=${NAMESPACE}`,
    `TEMPORAL_SERVER_VERSION=${TEMPORAL_SERVER_VERSION}`,
    `TEMPORAL_HTTP_PORT=${s.plan.http}`,
    `TEMPORAL_HISTORY_PORT=${p.history.grpc}`,
    `TEMPORAL_MATCHING_PORT=${p.matching.grpc}`,
    `TEMPORAL_WORKER_PORT=${p.worker.grpc}`,
    `TEMPORAL_TLS_ADDRESS=${s.tlsAddress}`,
    `TEMPORAL_NAMESPACE_RETENTION=${NAMESPACE_RETENTION}`,
    `TEMPORAL_SEARCH_ATTRIBUTES=${PROJECT_SEARCH_ATTRIBUTES.join(',')}`,
    `TEMPORAL_DYNAMIC_CONFIG=${s.dynamicConfig}`,
    `POSTGRES_VERSION=${POSTGRES_MAJOR}`,
    `POSTGRES_PORT=${s.plan.postgres}`,
    `AGENT_SESSIONS_CLUSTER_DIR=${s.dir}`,
  ];
}
