/**
 * docker-compose.yml stays in step with the code: the worker service sets only variables the worker reads
 * (ENV_VARS in src/worker/config.ts) and builds from a Dockerfile that exists.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ENV_VARS } from '../../src/worker/config';

const root = path.resolve(__dirname, '../..');

interface ComposeService {
  build?: string | { context?: string; dockerfile?: string };
  environment?: Record<string, unknown> | string[];
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
