/**
 * The Temporal server's configuration, written as objects and serialized to YAML (the server's legacy loader reads
 * `<config>/base.yaml`, then merges `<config>/<env>.yaml` over it; `--env` names the process):
 *
 * - base.yaml: Temporal's `config/development-postgres12.yaml` of v1.32.0, field for field, with this cluster's
 *   ports, PostgreSQL address and dynamic config file, plus a `publicClient` section;
 * - <service>.yaml: what must differ per process on one host (the pprof port and the metrics address);
 * - frontend-tls.yaml: the TLS frontend's ports, TLS and optional mTLS and JWT authorization.
 *
 * Pure: builds values from the plan; main.ts writes them.
 */
import { stringify } from 'yaml';
import { HOST, SERVICES, type ClusterProcess, type Settings } from './plan';

/** A file's text: a comment header, then the YAML of `value` (long strings are never folded). */
export function yamlFile(header: string, value: unknown): string {
  return `# ${header}\n${stringify(value, { lineWidth: 0, aliasDuplicateObjects: false })}`;
}

const perProcess = (s: Settings, p: ClusterProcess) => ({
  pprof: { port: s.plan.processes[p].pprof },
  metrics: { prometheus: { listenAddress: `${HOST}:${s.plan.processes[p].metrics}` } },
});

/** base.yaml. */
export function baseConfig(s: Settings) {
  const sql = (databaseName: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName,
      connectAddr: `${HOST}:${s.plan.postgres}`,
      connectProtocol: 'tcp',
      user: 'temporal',
      password: 'temporal',
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  const rpc = (service: (typeof SERVICES)[number]) => ({
    grpcPort: s.plan.processes[service].grpc,
    membershipPort: s.plan.processes[service].membership,
    bindOnLocalHost: true,
  });
  const filestore = { fileMode: '0666', dirMode: '0766' };
  return {
    log: { stdout: true, level: 'info' },
    persistence: {
      defaultStore: 'postgres-default',
      visibilityStore: 'postgres-visibility',
      numHistoryShards: 4,
      datastores: {
        'postgres-default': sql('temporal', 20),
        'postgres-visibility': sql('temporal_visibility', 2),
      },
    },
    global: {
      membership: { maxJoinDuration: '30s', broadcastAddress: HOST },
      pprof: perProcess(s, 'frontend').pprof,
      metrics: {
        prometheus: {
          framework: 'tally',
          timerType: 'histogram',
          listenAddress: perProcess(s, 'frontend').metrics.prometheus.listenAddress,
        },
      },
    },
    services: {
      frontend: { rpc: { ...rpc('frontend'), httpPort: s.plan.http } },
      matching: { rpc: rpc('matching') },
      history: { rpc: rpc('history') },
      worker: { rpc: rpc('worker') },
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: s.address },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    archival: {
      history: {
        state: 'enabled',
        enableRead: true,
        provider: { filestore, gstorage: { credentialsPath: '/tmp/gcloud/keyfile.json' } },
      },
      visibility: { state: 'enabled', enableRead: true, provider: { filestore } },
    },
    namespaceDefaults: {
      archival: {
        history: { state: 'disabled', URI: 'file:///tmp/temporal_archival/development' },
        visibility: { state: 'disabled', URI: 'file:///tmp/temporal_vis_archival/development' },
      },
    },
    // Absolute: the server resolves this path against its working folder, not --root.
    dynamicConfigClient: { filepath: s.dynamicConfig, pollInterval: '10s' },
    // The system workers (worker service) reach the frontend here, not through the membership ring: there, a TLS
    // frontend (tls-frontend start) would be picked too, and refuse their plain, unauthenticated connections.
    publicClient: { hostPort: s.address, httpHostPort: `${HOST}:${s.plan.http}` },
  };
}

/** <service>.yaml: the pprof port and metrics address of one process. */
export function serviceConfig(s: Settings, p: ClusterProcess) {
  return { global: perProcess(s, p) };
}

export interface TlsOptions {
  /** Folder of ca.pem, server.pem, server-key.pem (and client.pem, client-key.pem with clientAuth). */
  certs: string;
  /** Require client certificates signed by ca.pem (mTLS). */
  clientAuth: boolean;
  /** Check API keys: JWTs signed by a key of this JWKS (http(s):// or file://). */
  jwks: string | undefined;
}

/**
 * frontend-tls.yaml, merged over base.yaml: its own ports (the whole `services.frontend` entry: the loader replaces
 * map entries, it does not merge them), TLS on its listener, and optionally mTLS and JWT authorization with
 * Temporal's default claim mapper and authorizer (API keys: `authorization: Bearer <JWT>`, RS256 or ES256, the
 * permissions claim `permissions`: ["<namespace>:read|write|worker|admin"]).
 */
export function tlsFrontendConfig(s: Settings, tls: TlsOptions) {
  const ports = s.plan.processes['frontend-tls'];
  return {
    global: {
      ...perProcess(s, 'frontend-tls'),
      tls: {
        frontend: {
          server: {
            certFile: `${tls.certs}/server.pem`,
            keyFile: `${tls.certs}/server-key.pem`,
            requireClientAuth: tls.clientAuth,
            ...(tls.clientAuth ? { clientCaFiles: [`${tls.certs}/ca.pem`] } : {}),
          },
        },
      },
      ...(tls.jwks
        ? {
            authorization: {
              jwtKeyProvider: { keySourceURIs: [tls.jwks], refreshInterval: '1m' },
              permissionsClaimName: 'permissions',
              authorizer: 'default',
              claimMapper: 'default',
            },
          }
        : {}),
    },
    services: {
      frontend: {
        rpc: {
          grpcPort: ports.grpc,
          membershipPort: ports.membership,
          bindOnLocalHost: true,
          httpPort: s.plan.tlsHttp,
        },
      },
    },
  };
}
