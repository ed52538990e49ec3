/**
 * Request and result shapes of the allocator's public API (core/index.ts). Stable: the CNI
 * plugin, the node agent and ipamctl build on them. docs/design-core.md §4 describes them.
 */
import type { IPFamily } from '../address/ip.ts';
import type { Allocation } from '../resources.ts';
import type { PoolSnapshot } from './pools.ts';

/** The pod an address is for; identity is handle + `uid` (never the pod name). */
export interface PodRef {
  namespace: string;
  name: string;
  /** The pod's UID as the runtime named it (K8S_POD_UID); absent when it did not: none recorded. */
  uid?: string;
}

/** Common part of an assignment request. */
export interface AssignRequestBase {
  /** `<network>.<containerID>.<ifname>` (see {@link handleOf}). */
  handle: string;
  /** The CNI network name; stored on the allocation so GC can select by network exactly. */
  network?: string;
  /** Node the pod runs on (where the address is routed). */
  node: string;
  pod?: PodRef;
  /** Node labels for pool nodeSelectors; when absent the allocator GETs the Node. */
  nodeLabels?: Readonly<Record<string, string>>;
  /** Pod namespace labels for namespaceSelectors; when absent (and `pod` given) it GETs the Namespace. */
  namespaceLabels?: Readonly<Record<string, string>>;
  /** Requested pool names or CIDRs (pod annotation, else namespace annotation). */
  pools?: readonly string[];
  /**
   * Settings, pools and reservations to decide with; when absent they are read (3 reads).
   * A stale snapshot is safe: every write is still a compare-and-swap on the block.
   */
  snapshot?: PoolSnapshot;
}

/** Automatic assignment: one address per wanted family. */
export interface AutoAssignRequest extends AssignRequestBase {
  /** Default true. */
  ipv4?: boolean;
  /** Default false. */
  ipv6?: boolean;
}

/** Static assignment: exactly these addresses (at most one per family). */
export interface StaticAssignRequest extends AssignRequestBase {
  /** e.g. ["10.244.3.70", "fd00::46"] */
  addresses: readonly string[];
}

/** One assigned address, in the form the CNI result needs. */
export interface AssignedAddress {
  family: IPFamily;
  /** e.g. "10.244.3.70" */
  address: string;
  /** The block's prefix length (the pod sees the block prefix), e.g. 26. */
  prefixLength: number;
  /** The block's reserved gateway address (ordinal 1), e.g. "10.244.3.65". */
  gateway: string;
  /** IPAMBlock name, e.g. "10-244-3-64-26". */
  block: string;
  /** Block CIDR, e.g. "10.244.3.64/26". */
  blockCidr: string;
  pool: string;
  ordinal: number;
  /** Sequence number of this allocation: pass it to a later release to make it exact. */
  sequence: number;
  /** True when the block is affine to another node (or none). */
  borrowed: boolean;
}

/** Why an assignment failed — expected outcomes, not errors. */
export type AssignFailure =
  /** No usable pool of the family matches this node and namespace. */
  | 'NoPool'
  /** A requested pool is missing, shadowed or not allowed here (a selector excludes it). */
  | 'PoolRefused'
  /**
   * A requested pool (or a static address's pool) is disabled or being deleted; or, automatic,
   * no enabled pool matches and a disabled one would.
   */
  | 'PoolDisabled'
  /** Every allowed pool is full for this node (borrowing included, unless strictAffinity). */
  | 'Exhausted'
  /** As Exhausted, and the node holds maxBlocksPerNode blocks (the message names the limit). */
  | 'BlockLimit'
  /** The handle already holds an address of that family. */
  | 'HandleInUse'
  /** Static: the address is taken by another handle. */
  | 'Taken'
  /** Static: not in any usable pool allowed here, or not an address. */
  | 'NotInPool'
  /** Static: a block's reserved ordinal or inside an IPReservation. */
  | 'Reserved'
  /** Static: strictAffinity and the block belongs to another node, or an overlapping block of another size. */
  | 'NotAllowed';

export type AssignOutcome =
  | { ok: true; ipv4?: AssignedAddress; ipv6?: AssignedAddress }
  | { ok: false; reason: AssignFailure; message: string };

/** An existing allocation, with where it lives. */
export interface AllocatedAddress extends AssignedAddress {
  allocation: Allocation;
}

/** Result of a release: what was freed, and what a precondition (sequence / pod UID) kept. */
export interface ReleaseResult {
  released: AllocatedAddress[];
  refused: AllocatedAddress[];
}

/** The handle of an attachment: `<network>.<containerID>.<ifname>`. */
export function handleOf(network: string, containerID: string, ifname: string): string {
  return `${network}.${containerID}.${ifname}`;
}
