/**
 * blockipam/core/node-ipam — the node IPAM service the agent and the plugin's direct path run
 * (docs/design-core.md §Node IPAM service), its types, and the wire between the plugin's
 * forwarder and the agent (wire.ts).
 */
export * from './service-types.ts';
export * from './wire.ts';
export type { NodeIpam } from './types.ts';
export { errorKindOf, nodeIpamErrorOf } from './errors.ts';
export { credentialNodeProblem, servedNodeProblem } from './node-check.ts';
export { createNodeIpam } from './service.ts';
export { datastoreInputs } from './inputs.ts';
export type { NodeInputs } from './inputs.ts';
export { readAnnotations } from './annotations.ts';
export { poolStatus } from './status.ts';
export { toAddOutcome } from './outcomes.ts';
export { addFailureReasonOf } from './failure-reason.ts';
export type { AddAnswer } from './failure-reason.ts';
