/** Connections to Temporal from the configuration (address, namespace, TLS or API key). Does I/O. */
import { readFileSync } from 'node:fs';
import { Connection } from '@temporalio/client';
import { NativeConnection, type NativeConnectionOptions } from '@temporalio/worker';
import { wantsTls, type Config } from './config';

function tlsOptions(config: Config) {
  if (!wantsTls(config)) return undefined;
  const { certPath, keyPath, caPath, serverName } = config.tls;
  return {
    ...(serverName ? { serverNameOverride: serverName } : {}),
    ...(caPath ? { serverRootCACertificate: readFileSync(caPath) } : {}),
    ...(certPath && keyPath
      ? { clientCertPair: { crt: readFileSync(certPath), key: readFileSync(keyPath) } }
      : {}),
  };
}

/** Connection options shared by the worker's native connection and the client connection. */
export function connectionOptions(config: Config, address: string): NativeConnectionOptions {
  const tls = tlsOptions(config);
  return {
    address,
    ...(tls ? { tls } : {}),
    ...(config.apiKey ? { apiKey: config.apiKey } : {}),
  };
}

export function connectWorker(config: Config, address: string): Promise<NativeConnection> {
  return NativeConnection.connect(connectionOptions(config, address));
}

export function connectClient(config: Config, address: string): Promise<Connection> {
  const tls = tlsOptions(config);
  return Connection.connect({
    address,
    ...(tls ? { tls } : {}),
    ...(config.apiKey ? { apiKey: config.apiKey } : {}),
  });
}
