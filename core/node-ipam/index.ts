/**
 * blockipam/core/node-ipam — the node IPAM protocol (plugin ↔ agent) and, once built, the node
 * IPAM service both ends run (docs/design-agent.md §IPAM server). The protocol module is
 * dependency-free: the plugin's start-up path imports it alone.
 */
export * from './protocol.ts';
export type { NodeIpam } from './types.ts';
export { errorKindOf } from './errors.ts';
