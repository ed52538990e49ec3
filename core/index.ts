/**
 * blockipam core — the public API (documented in docs/design-core.md §4).
 *
 * Allocation:   autoAssign, assignIP, releaseByHandle, releaseAddresses, releaseForGC,
 *               findByHandle, listNodeAllocations, releaseNodeBlocks,
 *               loadSnapshot
 * Validation:   validatePool, checkBlockInvariants, configProblems
 * Trust:        classifyBlocks, trustedAffine (which blocks routes, allocation and
 *               maxBlocksPerNode act on; docs/design-core.md §Trusted blocks)
 * Pool health:  poolUtilization, poolConditions, setConditions, nodeHeadroom (IPPool.status's
 *               figures, conditions and short nodes; docs/design-controller.md §Pool conditions)
 * Adoption:     planAdoption (what keeping a host-local cluster's pod addresses in place
 *               would hold, and what stops it: ipamctl adopt plan); finalizeBlockers (what
 *               stops switching adoption mode off: ipamctl adopt finalize)
 * Routes:       planIPAMNodes, sameIPAMNodeSpec, internalIPs (the per-node route source,
 *               docs/design-controller.md §IPAMNode)
 * Blocks:       newBlock, allocateOrdinal, pickOrdinal, releaseHandle, cidrOf, blockLabels (pure;
 *               seed blocks exactly as the allocator writes them)
 * Datastores:   Datastore (port), MemoryDatastore, createBatchingDatastore (one UPDATE for
 *               concurrent writes of a block: the node agent's)
 * Errors:       NotFoundError, AlreadyExistsError, ConflictError, InvalidError,
 *               ApiError (refined: DecodeError, TlsError), UnavailableError (refined:
 *               RequestTimeoutError, ProxyError), RetriesExhaustedError (+ isX guards)
 *
 * Imported as `blockipam/core` (package.json "exports"). The Kubernetes adapter (KubeDatastore,
 * the lean transport) is the separate entry `blockipam/core/kube` (core/kube/index.ts), and the
 * kubeconfig loader `blockipam/core/kubeconfig` (core/kube/kubeconfig.ts: it loads the YAML
 * parser, which the CNI plugin's warm path must not). This entry loads no I/O module: a caller
 * of the pure core and the memory store pulls in no transport.
 */
export { autoAssign } from './allocator/auto-assign.ts';
export { assignIP } from './allocator/static-assign.ts';
export { findByHandle, listNodeAllocations, releaseAddresses, releaseByHandle } from './allocator/release.ts';
export type { AddressRelease } from './allocator/release.ts';
export { releaseForGC } from './allocator/gc.ts';
export { isLivePod, podIPs } from './allocator/pod-liveness.ts';
export { releaseNodeBlocks } from './allocator/node-blocks.ts';
export { releaseUnownedEmptyBlocks } from './allocator/unowned-blocks.ts';
export { claimNodeBlock, releaseIdleBlock } from './allocator/node-upkeep.ts';
export {
  isPodCIDRPool,
  loadSnapshot,
  poolBlockSize,
  poolCidr,
  snapshotOf,
  usablePools,
} from './allocator/pools.ts';
export type { PoolSnapshot } from './allocator/pools.ts';
export { classifyBlocks, DISTRUST_REASONS, trustedAffine } from './allocator/block-trust.ts';
export type { DistrustReason } from './allocator/block-trust.ts';
export { internalIPs, planIPAMNodes, sameIPAMNodeSpec } from './routes/ipam-node.ts';
export type { AddressedNode, UnroutedBlock } from './routes/ipam-node.ts';
export { noInternalIPMessage, routeNextHop, unroutableDestinations } from './routes/reachability.ts';
export { claimPoolsData, sameClaimPoolsData } from './allocator/claim-admission.ts';
export { poolUtilization } from './allocator/utilization.ts';
export {
  FORECAST_WINDOW_MS,
  forecastExhaustion,
  forecastText,
  MAX_BASELINE_AGE_MS,
  MAX_SAMPLES,
  nextSamples,
  SAMPLE_INTERVAL_MS,
} from './allocator/forecast.ts';
export type { AllocationSample, Forecast } from './allocator/forecast.ts';
export type { PoolUtilization } from './allocator/utilization.ts';
export { POOL_CONDITIONS, poolConditions } from './allocator/pool-conditions.ts';
export type { PoolConditionInput } from './allocator/pool-conditions.ts';
export { cannotClaimText, nodeHeadroom, requestedManualPools } from './allocator/headroom.ts';
export type { HeadroomNode, NodeHeadroom, ShortReason } from './allocator/headroom.ts';
export { planUpkeep } from './allocator/upkeep-plan.ts';
export type { UpkeepPlan } from './allocator/upkeep-plan.ts';
export { becameTrue, conditionOf, setConditions } from './conditions.ts';
export { newStats } from './allocator/context.ts';
export type { AllocatorOptions, AllocatorStats, RollbackFailure } from './allocator/context.ts';
export { handleOf } from './allocator/types.ts';
export type { AssignedAddress, AssignOutcome, AutoAssignRequest } from './allocator/types.ts';
export { planAdoption } from './adopt/plan.ts';
export type { AdoptionInput, AdoptionPlan, NodeAdoptionPlan, PodAddressPlan } from './adopt/plan.ts';
export type { PodCIDRPlan } from './adopt/podcidr-plan.ts';
export type { PodCIDRNode } from './adopt/podcidr.ts';
export { podCIDRsOf } from './adopt/podcidr.ts';
export { ADOPT_LABEL, isAdoptionOptedIn } from './adopt/opt-in.ts';
export { finalizeBlockers, isReadyToFinalize } from './adopt/finalize.ts';
export type {
  FinalizeBlockers,
  FinalizeInput,
  NodeNotAdopted,
  UnrecordedAddress,
  UnrecordedPodIPs,
} from './adopt/finalize.ts';
export { MAX_TILES_PER_PODCIDR, planPodCIDRBlocks, podCIDRBlockGiven } from './adopt/podcidr-blocks.ts';
export { planHostLocalImport } from './adopt/host-local.ts';
export { DEFAULT_IFNAME, parseHostLocalFile } from './adopt/host-local-file.ts';
export type { HostLocalFile } from './adopt/host-local-file.ts';
export { recordHostLocalImports } from './adopt/host-local-import.ts';
export type { ImportOutcome } from './adopt/host-local-import.ts';
export type { HostLocalImport, HostLocalImportPlan, HostLocalQuarantine } from './adopt/host-local.ts';
export type { PodCIDRBlockConflict, PodCIDRBlockPlan } from './adopt/podcidr-blocks.ts';
export type { AdoptionConflict, AdoptionNote } from './adopt/conflicts.ts';
export { validatePool } from './pool-validation.ts';
export { rfc3339 } from './time.ts';

export { checkBlockInvariants } from './block/invariants.ts';
export {
  FREEZE_REASONS,
  SEQUENCE_MAX,
  SEQUENCE_REPAIRABLE_ABOVE,
  freezesOf,
  isAllocatable,
  isSafeSequence,
  repairedSequence,
  unsafeSequences,
} from './block/frozen.ts';
export type { Freeze, FreezeReason } from './block/frozen.ts';
export { MANAGED_FIELDS_SLACK_BYTES, managedFieldsExcess } from './block/managed-fields.ts';
export type { ManagedFieldsExcess } from './block/managed-fields.ts';
export {
  allocateOrdinal,
  blockFree,
  capacityOf,
  cidrOf,
  emptySinceMs,
  newBlock,
  pickOrdinal,
  releaseHandle,
} from './block/block.ts';
export type { Owner } from './block/block.ts';
export {
  POOL_LABEL,
  REGION_LABEL,
  affineSelector,
  blockLabels,
  familySelector,
  nodeBlocksSelector,
  nodeLabel,
} from './block/labels.ts';

export { configProblems, DEFAULT_SETTINGS, IPAM_CONFIG_NAME, SETTING_LIMITS, settingsOf } from './config.ts';
export type { IPAMSettings, NumericSetting } from './config.ts';

export * from './address/ip.ts';
export * from './address/block-cidr.ts';
export { matchesSelector, selectorToQuery } from './selector.ts';
export * from './resources.ts';

export type {
  BlockStatusDatastore,
  Datastore,
  DeletePreconditions,
  ListOptions,
  Page,
  PageOptions,
  ResourceStore,
  StatusResourceStore,
} from './datastore/datastore.ts';
export { MemoryDatastore } from './datastore/memory.ts';
export { abortable, withSignal } from './datastore/with-signal.ts';
export { batchedBackoffSleep, createBatchingDatastore } from './datastore/batching.ts';
export { withBlocks } from './datastore/with-blocks.ts';
export { isLaterVersion } from './datastore/resource-version.ts';
export type { BatchingDatastore, BatchingStats } from './datastore/batching.ts';
export { listAll } from './datastore/paging.ts';
export type { MemorySeed } from './datastore/memory.ts';

export { POOLS_ANNOTATION } from './annotations.ts';

export { AlreadyExistsError, isAlreadyExists } from './errors/already-exists.ts';
export { ApiError, isApiError } from './errors/api-error.ts';
export { apiRefusalOf } from './errors/api-refusal.ts';
export { boundMessage, MAX_MESSAGE_CHARS } from './errors/bounded-message.ts';
export { ConflictError, isConflict } from './errors/conflict.ts';
export { DecodeError, isDecodeError } from './errors/decode-error.ts';
export { ExpiredError, isExpired } from './errors/expired.ts';
export { InvalidError, isInvalid } from './errors/invalid.ts';
export { NotFoundError, isNotFound } from './errors/not-found.ts';
export { ProxyError, isProxyError } from './errors/proxy-error.ts';
export { RequestTimeoutError, isRequestTimeout } from './errors/request-timeout.ts';
export { TlsError, isTlsError } from './errors/tls-error.ts';
export { RetriesExhaustedError, isRetriesExhausted } from './errors/retries-exhausted.ts';
export { UnavailableError, isUnavailable } from './errors/unavailable.ts';
