/**
 * The node IPAM service's interface (docs/design-core.md §Node IPAM service): the five operations of
 * the protocol (protocol.ts), each bounded by the caller's signal. The agent serves it over its
 * socket; the plugin's direct path (fallback and standalone mode) calls it in-process. Expected
 * outcomes are values; failures are thrown as core's errors (UnavailableError, ApiError,
 * RetriesExhaustedError …, or the signal's reason) and mapped once by {@link errorKindOf}.
 */
import type { NodeIpamOp, NodeIpamOps } from './service-types.ts';

export type NodeIpam = {
  readonly [K in NodeIpamOp]: (
    call: NodeIpamOps[K]['call'],
    signal: AbortSignal,
  ) => Promise<NodeIpamOps[K]['outcome']>;
};
