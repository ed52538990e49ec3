/**
 * blockipam/core/cni — the CNI protocol layer (docs/design-plugin.md §Start-up): the dispatcher
 * with one file per command, the CNI_* environment, the netconf and its ahead-of-time compiled
 * validator, results, prevResult, versions and the CNI error codes. The plugin's executable runs
 * it for its direct path and the node agent for every call forwarded to it, so both answer a
 * call with the same bytes. Loads core's address module, not the allocator or the Kubernetes
 * transport: the caller injects the node IPAM client ({@link Deps.client}).
 */
export { dispatch } from './dispatch.ts';
export type { Io, IpamCommand } from './dispatch.ts';
export type { IpamClient } from './client.ts';
export type { Level, Logger, LoggerOptions } from './log.ts';
export type { CniCommand } from './env.ts';
export { parseNetConf, networkNameProblem } from './netconf.ts';
export type { NetConf } from './netconf.ts';
export * from './errors.ts';
export { agentMarginMs } from './forward.ts';
export * from './deletion-queue.ts';
export * from './ensure-dir.ts';
export {
  readRecord,
  readStore,
  readStoreFiles,
  releaseFromStore,
  reserveInStore,
} from './host-local-store.ts';
export type { StoreFiles, StoreHolder, UnreadableEntry } from './host-local-store.ts';
