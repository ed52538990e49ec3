/**
 * blockipam/core/cni — the CNI protocol layer (docs/design-plugin.md §Start-up): the dispatcher
 * with one file per command, the CNI_* environment, the netconf and its ahead-of-time compiled
 * validator, results, prevResult, versions and the CNI error codes. The plugin's executable runs
 * it for its direct path and the node agent for every call forwarded to it, so both answer a
 * call with the same bytes. Loads core's address module, not the allocator or the Kubernetes
 * transport: the caller injects the node IPAM client ({@link Deps.client}).
 */
export { dispatch, errorVersion, cpuMs } from './dispatch.ts';
export type { Deps, Io, IpamCommand } from './dispatch.ts';
export type { IpamClient } from './client.ts';
export type { Level, Logger, LoggerFactory, LoggerOptions, Sink } from './log.ts';
export { cniCommands, isCniCommand, parseEnv } from './env.ts';
export type { CniCommand, Env, InvocationEnv } from './env.ts';
export { parseNetConf, defaultKubeconfig, defaultCacheDir, networkNameProblem } from './netconf.ts';
export type { NetConf } from './netconf.ts';
export { currentVersion, isSupportedVersion, supportedVersions } from './versions.ts';
export type { CniVersion } from './versions.ts';
export * from './errors.ts';
export { agentMarginMs, DEFAULT_TIMEOUT_MS, DIRECT_ENV } from './forward.ts';
export * from './deletion-queue.ts';
