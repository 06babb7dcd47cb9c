/**
 * The cluster tool's pure parts (scripts/cluster/): the port plan, the settings and `env` lines, the data-folder
 * rule, and the server configuration it writes. The tool itself (processes, PostgreSQL, Temporal) runs in the
 * cluster tier (test/cluster/).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { deletedByDown, outsideFolder, pgLocation } from '../../scripts/cluster/dataFolder';
import {
  allPorts,
  DEFAULT_PORT_OFFSET,
  envLines,
  MAX_PORT_OFFSET,
  parseOffset,
  portPlan,
  PROCESSES,
  searchAttributes,
  settingsFrom,
} from '../../scripts/cluster/plan';
import { UsageError } from '../../scripts/cluster/proc';
import { baseConfig, serviceConfig, tlsFrontendConfig, yamlFile } from '../../scripts/cluster/serverConfig';
import { PREFERRED_PORT } from '../../src/cli/devfile';
import { SEARCH_ATTRIBUTE_FLAGS } from '../../src/contract/searchAttributes';
import { DEFAULT_NAMESPACE } from '../../src/worker/config';

const ROOT = '/work/clone';
const settings = (env: NodeJS.ProcessEnv = {}) => settingsFrom({ HOME: '/home/dev', ...env }, ROOT);

describe('the port plan', () => {
  it('puts the default cluster 10000 above Temporal’s standard ports (frontend 17233, PostgreSQL 15432)', () => {
    const plan = portPlan(DEFAULT_PORT_OFFSET);
    expect(plan.processes).toEqual({
      frontend: { grpc: 17233, membership: 16933, pprof: 17936, metrics: 18000 },
      history: { grpc: 17234, membership: 16934, pprof: 17937, metrics: 18001 },
      matching: { grpc: 17235, membership: 16935, pprof: 17938, metrics: 18002 },
      worker: { grpc: 17239, membership: 16939, pprof: 17939, metrics: 18003 },
      'frontend-tls': { grpc: 17236, membership: 16936, pprof: 17940, metrics: 18004 },
    });
    expect([plan.http, plan.tlsHttp, plan.postgres]).toEqual([17243, 17246, 15432]);
  });

  it('with offset 0 is the standard ports: the frontend on the port the code prefers for a dev server', () => {
    const plan = portPlan(0);
    expect(plan.processes.frontend.grpc).toBe(PREFERRED_PORT);
    expect(plan.postgres).toBe(5432);
  });

  it('moves every port by the offset, uses none twice, and stays below 65536', () => {
    const standard = allPorts(portPlan(0));
    fc.assert(
      fc.property(fc.integer({ min: 0, max: MAX_PORT_OFFSET }), (offset) => {
        const ports = allPorts(portPlan(offset));
        expect(ports).toEqual(standard.map((p) => p + offset));
        expect(new Set(ports).size).toBe(ports.length);
        expect(Math.max(...ports)).toBeLessThan(65536);
      }),
    );
  });

  it('takes AGENT_SESSIONS_CLUSTER_PORT_OFFSET as digits from 0 to 50000, the default when unset or empty', () => {
    expect(parseOffset(undefined)).toBe(DEFAULT_PORT_OFFSET);
    expect(parseOffset('')).toBe(DEFAULT_PORT_OFFSET);
    expect(parseOffset('0')).toBe(0);
    expect(parseOffset('50000')).toBe(50000);
    for (const bad of ['50001', '-1', '1.5', ' 5', '1e3', 'x'])
      expect(() => parseOffset(bad), bad).toThrow(UsageError);
    expect(() => settings({ AGENT_SESSIONS_CLUSTER_PORT_OFFSET: 'x' })).toThrow(
      'AGENT_SESSIONS_CLUSTER_PORT_OFFSET must be a number from 0 to 50000',
    );
  });
});

describe('the settings and `env`', () => {
  it('prints the address, ports, versions and folders, in the order docker-compose’s check reads them', () => {
    expect(envLines(settings())).toEqual([
      'TEMPORAL_ADDRESS=127.0.0.1:17233',
      'TEMPORAL_NAMESPACE=default',
      'TEMPORAL_SERVER_VERSION=1.32.0',
      'TEMPORAL_HTTP_PORT=17243',
      'TEMPORAL_HISTORY_PORT=17234',
      'TEMPORAL_MATCHING_PORT=17235',
      'TEMPORAL_WORKER_PORT=17239',
      'TEMPORAL_TLS_ADDRESS=127.0.0.1:17236',
      'TEMPORAL_NAMESPACE_RETENTION=168h',
      `TEMPORAL_SEARCH_ATTRIBUTES=${SEARCH_ATTRIBUTE_FLAGS.join(',')}`,
      `TEMPORAL_DYNAMIC_CONFIG=${ROOT}/scripts/cluster/dynamicconfig.yaml`,
      'POSTGRES_VERSION=15',
      'POSTGRES_PORT=15432',
      `AGENT_SESSIONS_CLUSTER_DIR=${ROOT}/.data/cluster`,
    ]);
    expect(envLines(settings())[1]).toBe(`TEMPORAL_NAMESPACE=${DEFAULT_NAMESPACE}`);
  });

  it('keeps the state folder in the clone and the Go build in the cache outside it, unless told otherwise', () => {
    const s = settings();
    expect([s.dir, s.dirFromEnv, s.logdir]).toEqual([
      `${ROOT}/.data/cluster`,
      false,
      `${ROOT}/.data/cluster/logs`,
    ]);
    expect(s.serverBin).toBe('/home/dev/.cache/agent-sessions/go/bin/temporal-server-1.32.0/temporal-server');
    const moved = settings({ AGENT_SESSIONS_CLUSTER_DIR: '/srv/cl', AGENT_SESSIONS_CACHE: '/cache' });
    expect([moved.dir, moved.dirFromEnv, moved.gopath]).toEqual(['/srv/cl', true, '/cache/go']);
  });

  it('registers the code’s search attributes, then the extra ones, and refuses a malformed one', () => {
    const extra = { AGENT_SESSIONS_CLUSTER_SEARCH_ATTRIBUTES: 'CustomA=Keyword,, CustomB=Int' };
    expect(searchAttributes(settings()).map((a) => `${a.name}=${a.type}`)).toEqual(SEARCH_ATTRIBUTE_FLAGS);
    expect(() => searchAttributes(settings(extra))).toThrow("bad search attribute ' CustomB=Int'");
    const good = { AGENT_SESSIONS_CLUSTER_SEARCH_ATTRIBUTES: 'CustomA=Keyword,,CustomB=Int' };
    expect(searchAttributes(settings(good)).slice(-2)).toEqual([
      { name: 'CustomA', type: 'Keyword' },
      { name: 'CustomB', type: 'Int' },
    ]);
  });
});

describe('the data-folder rule', () => {
  const state = '/root/clone/.data/cluster';
  const outside = outsideFolder(state);

  it('keeps PostgreSQL inside the state folder when its user can enter it (or runs as the caller)', () => {
    for (const facts of [
      { link: undefined, runsAsRoot: false, pgCanEnterStateDir: false },
      { link: undefined, runsAsRoot: true, pgCanEnterStateDir: true },
    ]) {
      const loc = pgLocation(state, facts);
      expect(loc).toEqual({
        dir: `${state}/postgres`,
        data: `${state}/postgres/data`,
        socket: `${state}/postgres/socket`,
        log: `${state}/postgres/postgres.log`,
        outside: false,
      });
      expect(deletedByDown(loc)).toBe(false);
    }
  });

  it('as root, when postgres cannot enter the state folder: a folder in /var/tmp named by the path, deleted by down', () => {
    const loc = pgLocation(state, { link: undefined, runsAsRoot: true, pgCanEnterStateDir: false });
    expect(loc.dir).toBe(outside);
    expect(loc.dir).toMatch(/^\/var\/tmp\/agent-sessions-pg-[0-9a-f]{12}$/);
    expect(loc.outside).toBe(true);
    expect(deletedByDown(loc)).toBe(true);
  });

  it('names that folder by the first 12 hex digits of the SHA-256 of the path: one per state folder', () => {
    // printf '%s' /root/xcl-test | sha256sum | cut -c1-12
    expect(outsideFolder('/root/xcl-test')).toBe('/var/tmp/agent-sessions-pg-2291281e3b3a');
    expect(outsideFolder('/root/other/.data/cluster')).not.toBe(outside);
  });

  it('follows the symlink <state>/postgres once it exists, whoever runs; down deletes only the tool’s own folders', () => {
    const linked = pgLocation(state, { link: outside, runsAsRoot: false, pgCanEnterStateDir: true });
    expect([linked.dir, linked.outside, deletedByDown(linked)]).toEqual([outside, true, true]);
    const elsewhere = pgLocation(state, { link: '/srv/pg', runsAsRoot: true, pgCanEnterStateDir: false });
    expect([elsewhere.dir, elsewhere.outside, deletedByDown(elsewhere)]).toEqual(['/srv/pg', true, false]);
  });
});

describe('the server configuration', () => {
  const s = settings();
  const roundTrip = (value: unknown) => parse(yamlFile('header', value)) as unknown;

  it('serializes to YAML that reads back as the same object, without anchors', () => {
    for (const value of [
      baseConfig(s),
      serviceConfig(s, 'history'),
      tlsFrontendConfig(s, { certs: '/c', clientAuth: true, jwks: 'https://x/jwks' }),
    ]) {
      expect(roundTrip(value)).toEqual(value);
      expect(yamlFile('header', value)).not.toMatch(/[&*]a\d/);
    }
    expect(yamlFile('header line', {})).toMatch(/^# header line\n/);
  });

  it('points base.yaml at the plan’s ports, PostgreSQL, absolute dynamic config and plain frontend', () => {
    const base = baseConfig(s);
    expect(base.persistence.datastores['postgres-default'].sql.connectAddr).toBe('127.0.0.1:15432');
    expect(base.persistence.datastores['postgres-visibility'].sql.connectAddr).toBe('127.0.0.1:15432');
    expect(base.services.frontend.rpc).toEqual({
      grpcPort: 17233,
      membershipPort: 16933,
      bindOnLocalHost: true,
      httpPort: 17243,
    });
    expect(base.services.worker.rpc).toEqual({
      grpcPort: 17239,
      membershipPort: 16939,
      bindOnLocalHost: true,
    });
    expect(base.clusterMetadata.clusterInformation.active.rpcAddress).toBe('127.0.0.1:17233');
    expect(base.dynamicConfigClient.filepath).toBe(`${ROOT}/scripts/cluster/dynamicconfig.yaml`);
    expect(base.publicClient).toEqual({ hostPort: '127.0.0.1:17233', httpHostPort: '127.0.0.1:17243' });
    // Strings that look like numbers stay strings.
    expect(yamlFile('h', base)).toContain('fileMode: "0666"');
  });

  it('gives each process its own pprof port and metrics address', () => {
    const own = PROCESSES.map((p) => serviceConfig(s, p).global);
    expect(new Set(own.map((g) => g.pprof.port)).size).toBe(PROCESSES.length);
    expect(new Set(own.map((g) => g.metrics.prometheus.listenAddress)).size).toBe(PROCESSES.length);
  });

  it('asks for client certificates and checks API keys only when told to', () => {
    const plain = tlsFrontendConfig(s, { certs: '/c', clientAuth: false, jwks: undefined });
    expect(plain.global.tls.frontend.server).toEqual({
      certFile: '/c/server.pem',
      keyFile: '/c/server-key.pem',
      requireClientAuth: false,
    });
    expect(plain.global).not.toHaveProperty('authorization');
    expect(plain.services.frontend.rpc).toEqual({
      grpcPort: 17236,
      membershipPort: 16936,
      bindOnLocalHost: true,
      httpPort: 17246,
    });
    const strict = tlsFrontendConfig(s, { certs: '/c', clientAuth: true, jwks: 'file:///k.json' });
    expect(strict.global.tls.frontend.server).toMatchObject({
      requireClientAuth: true,
      clientCaFiles: ['/c/ca.pem'],
    });
    expect(strict.global).toMatchObject({
      authorization: {
        jwtKeyProvider: { keySourceURIs: ['file:///k.json'] },
        authorizer: 'default',
        claimMapper: 'default',
      },
    });
  });
});
