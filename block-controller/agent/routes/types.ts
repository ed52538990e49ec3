/**
 * Shapes shared by the route planner, the diff, the iproute2 adapter and the reconciler
 * (docs/design-agent.md "Routes"). Every destination is canonical CIDR text with an explicit
 * prefix ("10.244.3.64/26", "10.244.3.70/32", "fd00::40/122", "fd00::41/128"), so desired and
 * installed routes compare as strings.
 */
import type { DistrustReason, IPAMBlock, IPAMNode, IPFamily, IPPool, ObjectMeta } from 'blockipam/core';

/**
 * The routing protocol id (rtm_protocol) stamped on every route the agent installs, and the
 * only routes it ever reads, replaces or deletes. 210 is in none of iproute2's rt_protos
 * (0–18, 42, 99, 186–192) and is not Calico Felix's 80; kernels do not interpret values ≥ 4
 * (RTPROT_STATIC), so any free number works. Configurable for a host where 210 is taken.
 */
export const ROUTE_PROTOCOL = 210;

/** Where a desired route comes from (for logs and tests; not stored in the kernel). */
type RouteReason =
  /** Another node's affine block, via that node's InternalIP. */
  | 'block'
  /** One address of a block, allocated to a node other than the block's affinity (borrowed). */
  | 'borrowed'
  /** This node's own affine block: blackhole, so unallocated addresses never leave the node. */
  | 'own-block';

/** One route the agent wants in the main table. */
export interface DesiredRoute {
  readonly dst: string;
  readonly family: IPFamily;
  /** `unicast` = via `gateway`; `blackhole` = drop (this node's own blocks). */
  readonly type: 'unicast' | 'blackhole';
  /** Next hop: the owner's InternalIP of the same family; absent for blackhole. */
  readonly gateway?: string;
  readonly reason: RouteReason;
  /** IPAMBlock name the route derives from (absent for a borrowed address: its IPAMNode names no block). */
  readonly block?: string;
  /** Node the traffic goes to (the block's affinity or the borrower); absent for blackhole. */
  readonly node?: string;
}

/** One route of our protocol as the kernel reports it. */
export interface InstalledRoute {
  readonly dst: string;
  readonly family: IPFamily;
  readonly type: 'unicast' | 'blackhole' | 'other';
  readonly gateway?: string;
  readonly dev?: string;
  /** Absent when the kernel reports none (IPv4 routes at metric 0). */
  readonly metric?: number;
}

/** One change to apply. `replace` overwrites our own route for `dst`; `add` never overwrites. */
export type RouteChange =
  | { readonly op: 'add' | 'replace'; readonly route: DesiredRoute }
  | { readonly op: 'delete'; readonly route: InstalledRoute };

/** A route that should exist but cannot be planned (nothing is installed for it). */
export interface SkippedRoute {
  readonly block: string;
  readonly dst: string;
  readonly node: string;
  /**
   * `covers-node-address`: one of this node's blocks holds a node's address (no blackhole);
   * `no-internal-ip`: the IPAMNode has no address of the family; `invalid-cidr`: an IPAMNode
   * entry is no CIDR (the controller never writes one); `duplicate-dst`: planned twice. Blocks
   * core does not trust never reach the planner: the controller leaves them out of every
   * IPAMNode and reports them (docs/design-controller.md §IPAMNode).
   */
  readonly why: 'no-internal-ip' | 'duplicate-dst' | 'covers-node-address' | DistrustReason;
}

/** The fields of a Kubernetes Node the planner reads (structurally a client-node V1Node). */
export interface RouteNode {
  readonly metadata: Pick<ObjectMeta, 'name'>;
  readonly status?: { readonly addresses?: readonly { readonly type: string; readonly address: string }[] };
}

/**
 * Everything the planner needs, from the agent's informers. `synced` is true only once every
 * informer feeding it has completed its initial LIST: until then the reconciler touches no route
 * (an empty cache is not an empty cluster).
 */
export interface RouteView {
  readonly synced: boolean;
  /** Every IPAMNode (one per Node, the controller's). */
  readonly ipamNodes: readonly IPAMNode[];
  /** This node's Node object; undefined while it is not (yet) listed. */
  readonly node: RouteNode | undefined;
  /** This node's blocks (affine or holding its borrowed addresses): the blackholes. */
  readonly blocks: readonly IPAMBlock[];
  /** Every IPPool (disabled and shadowed ones too): which of this node's blocks are trusted. */
  readonly pools: readonly IPPool[];
}

/** The kernel side, as the reconciler needs it (iproute2.ts implements it). */
export interface RouteTable {
  /** Every route of our protocol in the main table, both families. */
  list(): Promise<InstalledRoute[]>;
  /**
   * Every unicast route of another protocol in the main table, both families: one equal to a
   * route we want is taken over (diff.ts), none is ever deleted.
   */
  others(): Promise<InstalledRoute[]>;
  /**
   * Applies the changes in order, continuing past failures.
   * @returns one entry per failed change (empty = all applied)
   */
  apply(changes: readonly RouteChange[]): Promise<{ change: RouteChange; error: string }[]>;
}
