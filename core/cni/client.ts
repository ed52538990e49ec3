/**
 * What the CNI commands call: the node IPAM's five operations in the service's terms
 * (core/node-ipam/service-types.ts: core's AddCall, DelCall … and their outcomes). Two
 * implementations: the node agent's (block-controller/agent/ipam/cni-call.ts: its service,
 * in-process) and the plugin's direct path (ipam-plugin/backend/direct-client.ts: core's
 * allocator under the host lock). Which one serves a call, and whether it takes the host lock,
 * is theirs to decide: a command only builds the call and formats the outcome.
 *
 * Expected outcomes are values; a failure is thrown, already a CniError (the agent's error kinds
 * and the direct path's failures are mapped by the implementation that met them).
 */
import type { NodeIpamOp, NodeIpamOps } from '../node-ipam/service-types.ts';

export type IpamClient = {
  readonly [K in NodeIpamOp]: (call: NodeIpamOps[K]['call']) => Promise<NodeIpamOps[K]['outcome']>;
} & {
  /** Which path served the call (`agent` or `direct`), for the `done` log line. */
  readonly path: 'agent' | 'direct';
  /** Frees the connection (socket or API); idempotent. */
  close(): Promise<void>;
  /** Counters of this invocation (API requests …), logged with the outcome. */
  stats?(): Readonly<Record<string, unknown>>;
};
