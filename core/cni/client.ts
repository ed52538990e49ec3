/**
 * What the CNI commands call: the node IPAM's five operations in the protocol's terms
 * (blockipam/core/node-ipam/protocol: core's AddCall, DelCall … and their outcomes). Two
 * implementations: agent-client.ts forwards each call to the node agent's socket, and
 * direct-client.ts runs it in this process on core's allocator under the host lock (the
 * fallback when the socket accepts no connection, and `ipam.mode: standalone`). Which one serves
 * a call, and whether it takes the host lock, is theirs to decide: a command only builds the
 * call and formats the outcome (docs/design-plugin.md §Thin client).
 *
 * Expected outcomes are values; a failure is thrown, already a CniError (the agent's error kinds
 * and the direct path's failures are mapped by the implementation that met them).
 */
import type { NodeIpamOp, NodeIpamOps } from '../node-ipam/protocol.ts';

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
