/**
 * blockipam/core/node-ipam — the node IPAM protocol (plugin ↔ agent) and the node IPAM service
 * both ends run (docs/design-core.md §Node IPAM service). The protocol module is dependency-free:
 * the plugin's start-up path imports it alone (`blockipam/core/node-ipam/protocol`); this entry
 * loads core's allocator.
 */
export * from './protocol.ts';
export type { NodeIpam } from './types.ts';
export { errorKindOf, nodeIpamErrorOf } from './errors.ts';
export { credentialNodeProblem, nodeMismatchMessage, servedNodeProblem } from './node-check.ts';
export { createNodeIpam } from './service.ts';
export type { NodeIpamOptions } from './service.ts';
export { datastoreInputs } from './inputs.ts';
export type { Awaitable, NodeInputs } from './inputs.ts';
export { readAnnotations } from './annotations.ts';
export type { AnnotationChoice } from './annotations.ts';
export { poolStatus } from './status.ts';
export type { StatusQuery } from './status.ts';
export { toAddOutcome, toGcOutcome, toIpConfigs } from './outcomes.ts';
export { addFailureReasonOf, assignFailureReason } from './failure-reason.ts';
export type { AddAnswer } from './failure-reason.ts';
