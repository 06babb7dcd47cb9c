/**
 * Finding and starting the Temporal binaries (embedded default dev server, test servers). Node-only; never import
 * from workflow code. Importing does no I/O.
 */
export {
  resolveTemporalCli,
  resolveTestServer,
  describeResolution,
  findProjectRoot,
  type BinaryName,
  type BinarySource,
  type ResolvedExecutable,
  type ResolveOptions,
} from './binaries';
export {
  startDevServer,
  spawnDevServer,
  getFreePort,
  devServerDbFilename,
  DEV_SERVER_DYNAMIC_CONFIG,
  DEV_SERVER_TUNING,
  DEFAULT_DB_BASENAME,
  type DevServerOptions,
  type EmbeddedDevServer,
  type SpawnDevServerOptions,
  type DevServerProcess,
  type DevServerExit,
} from './devServer';
export {
  createTimeSkippingEnv,
  createDevServerEnv,
  type TimeSkippingEnvOptions,
  type DevServerEnvOptions,
} from './testEnv';
