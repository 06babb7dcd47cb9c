/**
 * docker-compose.yml stays in step with the code: the worker service sets only variables the worker reads
 * (ENV_VARS in src/worker/config.ts) and builds from a Dockerfile that exists; and with scripts/cluster.sh (below).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { envLines, settingsFrom } from '../../scripts/cluster/plan';
import { SEARCH_ATTRIBUTE_FLAGS } from '../../src/contract/searchAttributes';
import { ENV_VARS } from '../../src/worker/config';

const root = path.resolve(__dirname, '../..');

interface ComposeService {
  image?: string;
  build?: string | { context?: string; dockerfile?: string };
  environment?: Record<string, unknown> | string[];
  ports?: string[];
  configs?: { source: string; target?: string }[];
}

const compose = parse(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8')) as {
  services: Record<string, ComposeService>;
};

function environmentNames(service: ComposeService): string[] {
  const env = service.environment ?? {};
  return Array.isArray(env) ? env.map((entry) => entry.split('=')[0] ?? entry) : Object.keys(env);
}

describe('docker-compose.yml', () => {
  const worker = compose.services.worker;

  it('has a worker service that sets the Temporal address, namespace, task queue and toolsets', () => {
    expect(worker).toBeDefined();
    expect(environmentNames(worker!)).toEqual(
      expect.arrayContaining([
        'TEMPORAL_ADDRESS',
        'TEMPORAL_NAMESPACE',
        'TASK_QUEUE',
        'AGENT_SESSIONS_TOOLSETS',
      ]),
    );
  });

  it('sets only variables listed in ENV_VARS on the worker', () => {
    const unknown = environmentNames(worker!).filter((name) => !Object.hasOwn(ENV_VARS, name));
    expect(unknown).toEqual([]);
  });

  it('builds the worker from the Dockerfile of this repository', () => {
    const build = typeof worker!.build === 'string' ? { context: worker!.build } : (worker!.build ?? {});
    const dockerfile = path.resolve(root, build.context ?? '.', build.dockerfile ?? 'Dockerfile');
    expect(existsSync(dockerfile)).toBe(true);
    const text = readFileSync(dockerfile, 'utf8');
    expect(text).toMatch(/AGENT_SESSIONS_SKIP_SETUP=1/);
    expect(text).toMatch(/CMD \["node", "bin\/agent-sessions\.js", "worker"\]/);
  });
});

/**
 * docker-compose.yml runs the cluster of scripts/cluster.sh (docs/operations.md): the same Temporal server and
 * PostgreSQL versions, the same host ports, dynamic config file, namespace retention and search attributes. The
 * tool prints them with `scripts/cluster.sh env`; these are the same lines (scripts/cluster/plan.ts), read here
 * without compiling and running the tool.
 */
describe('docker-compose.yml and scripts/cluster.sh', () => {
  const clusterEnv: Record<string, string> = Object.fromEntries(
    // The defaults, whatever the caller's environment overrides.
    envLines(
      settingsFrom(
        Object.fromEntries(
          Object.entries(process.env).filter(([name]) => !name.startsWith('AGENT_SESSIONS_CLUSTER_')),
        ),
        root,
      ),
    ).map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
  const service = (name: string) => {
    const s = compose.services[name];
    expect(s, `service ${name}`).toBeDefined();
    return s!;
  };
  /** The tag an image falls back to when its variable is unset: `repo:${VAR:-tag}` → tag. */
  const defaultTag = (image: string | undefined) => /:\$\{\w+:-([^}]+)\}$/.exec(image ?? '')?.[1] ?? image;

  it('prints the versions and ports it runs', () => {
    expect(clusterEnv).toMatchObject({
      TEMPORAL_SERVER_VERSION: expect.stringMatching(/^\d+\.\d+\.\d+$/),
      POSTGRES_VERSION: expect.stringMatching(/^\d+$/),
      TEMPORAL_ADDRESS: expect.stringMatching(/^127\.0\.0\.1:\d+$/),
      POSTGRES_PORT: expect.stringMatching(/^\d+$/),
    });
  });

  it('runs the same Temporal server and schema tool version', () => {
    for (const name of ['temporal', 'temporal-schema', 'temporal-namespace'])
      expect(defaultTag(service(name).image), name).toBe(clusterEnv.TEMPORAL_SERVER_VERSION);
  });

  it('runs the same PostgreSQL major version', () => {
    expect(defaultTag(service('postgresql').image)).toBe(clusterEnv.POSTGRES_VERSION);
  });

  it('publishes the frontend (gRPC and HTTP) and PostgreSQL on the same host ports', () => {
    const grpcPort = clusterEnv.TEMPORAL_ADDRESS!.split(':')[1];
    expect(service('temporal').ports).toEqual(
      expect.arrayContaining([`${grpcPort}:7233`, `${clusterEnv.TEMPORAL_HTTP_PORT}:7243`]),
    );
    expect(service('postgresql').ports).toEqual([`127.0.0.1:${clusterEnv.POSTGRES_PORT}:5432`]);
  });

  it('mounts the dynamic config file the script uses, which keeps updates enabled', () => {
    const configs = (compose as { configs?: Record<string, { file?: string }> }).configs ?? {};
    const mounted = (service('temporal').configs ?? []).map((c) => configs[c.source]?.file);
    expect(mounted.map((file) => file && path.resolve(root, file))).toContain(
      clusterEnv.TEMPORAL_DYNAMIC_CONFIG,
    );
    const dynamic = parse(readFileSync(clusterEnv.TEMPORAL_DYNAMIC_CONFIG!, 'utf8')) as Record<
      string,
      { value: unknown }[]
    >;
    expect(dynamic['frontend.enableUpdateWorkflowExecution']).toEqual([{ value: true }]);
    expect(dynamic['frontend.enableUpdateWorkflowExecutionAsyncAccepted']).toEqual([{ value: true }]);
  });

  it('registers the namespace with the same retention and the same search attributes', () => {
    const env = service('temporal-namespace').environment as Record<string, string>;
    expect(env.NAMESPACE_RETENTION).toBe(clusterEnv.TEMPORAL_NAMESPACE_RETENTION);
    expect(env.SEARCH_ATTRIBUTES).toBe(clusterEnv.TEMPORAL_SEARCH_ATTRIBUTES);
    expect(clusterEnv.TEMPORAL_NAMESPACE).toBe('default');
  });

  it("registers exactly the code's search attributes (SEARCH_ATTRIBUTE_FLAGS), names and types, in its order", () => {
    expect(clusterEnv.TEMPORAL_SEARCH_ATTRIBUTES!.split(',')).toEqual([...SEARCH_ATTRIBUTE_FLAGS]);
  });
});
