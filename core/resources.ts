/**
 * The wire shapes of blockipam's custom resources (API group `ipam.blockipam.io`, version
 * `v1alpha1`, all cluster-scoped; schemas in crds/*.yaml) and of the few built-in objects the
 * IPAM reads (Pod, Namespace, Node). Objects handed out by a Datastore are already validated by
 * the API server's schema (or were written by this code): nothing downstream re-validates.
 * Formats explained in docs/design-core.md §1.
 */

export const API_VERSION = 'ipam.blockipam.io/v1alpha1';

/**
 * Whether `name` is a lower-case RFC 1123 subdomain of at most `max` characters (default 253):
 * what Kubernetes takes as a Node's or a cluster-scoped custom resource's name
 * (apimachinery's IsDNS1123Subdomain). An IPPool name is one of at most 63 (crds/ippools.yaml).
 * A name outside it would reach the API as another path — `p/status` is p's status subresource.
 */
export function isDnsSubdomain(name: string, max = 253): boolean {
  return name.length <= max && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(name);
}

/** Orders objects by name in code-unit order, as the API server lists them (not localeCompare). */
export function byName(a: KubeObject, b: KubeObject): number {
  return a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0;
}

/** Kubernetes ObjectMeta, the fields blockipam uses. */
export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  /** Keys that hold a deletion until removed (core never sets any on its objects). */
  finalizers?: string[];
  annotations?: Record<string, string>;
  /** Objects this one belongs to: Kubernetes' garbage collector deletes it with its owner. */
  ownerReferences?: OwnerReference[];
  /**
   * The API server's record of who set which field (opaque here: core never reads it, resets it
   * on each write, and `managedFieldsExcess` sizes it).
   */
  managedFields?: unknown[];
}

/** Kubernetes OwnerReference (the fields blockipam sets). */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
}

/** Kubernetes LabelSelector (matchLabels AND matchExpressions); empty/absent selects everything. */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: readonly LabelSelectorRequirement[];
}

export interface LabelSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values?: readonly string[];
}

/** Any object with metadata; what a Datastore stores. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
}

export interface IPPoolSpec {
  /** Strictly masked CIDR, immutable, e.g. "10.244.0.0/16". */
  cidr: string;
  /** Block prefix length, immutable; default 26 (IPv4) / 122 (IPv6). v4 20–30, v6 116–126. */
  blockSize?: number;
  /** Nodes that may claim blocks from this pool; absent = all nodes. */
  nodeSelector?: LabelSelector;
  /** Namespaces whose pods may get addresses from this pool; absent = all. */
  namespaceSelector?: LabelSelector;
  /** Manual pools are used only when a pod (or its namespace) requests them. Default Automatic. */
  assignmentMode?: 'Automatic' | 'Manual';
  /** Stops new allocations (existing ones stay). Default false. */
  disabled?: boolean;
  /**
   * Each node's blocks in this pool are the tiles of its `spec.podCIDRs`, created affine to it by
   * the controller; nodes neither claim nor borrow in it, nor release those blocks idle (adopting
   * a host-local cluster in place: core/adopt/podcidr-blocks.ts). Default false.
   */
  podCIDRBlocks?: boolean;
}

/** A Kubernetes-shaped condition (metav1.Condition's fields). */
export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  /** metadata.generation of the object when the condition was set. */
  observedGeneration?: number;
}

/** A node short of addresses in a pool (core's nodeHeadroom): below the watermark, unable to claim. */
interface ShortNodeStatus {
  node: string;
  /** Free addresses in the node's affine blocks of the pool. */
  free: number;
  /** The node's affine blocks of the pool. */
  blocks: number;
  /** AutoAllocateOff, MaxBlocksPerNode or NoUnclaimedBlocks. */
  reason: string;
}

/** Written by the cluster controller through the status subresource. */
export interface IPPoolStatus {
  /** Effective block prefix length (spec.blockSize, else 26 / 122): the BLOCK SIZE column. */
  blockSize?: number;
  /** Assignable addresses (block reserved ordinals excluded). */
  capacity?: number;
  /** Addresses of the pool inside IPReservations. */
  reserved?: number;
  observedGeneration?: number;
  allocated?: number;
  free?: number;
  blocks?: number;
  /** Ready, NearlyExhausted, Exhausted, Disabled, Terminating or CIDROverlap: the STATE column. */
  state?: string;
  /** Block-sized ranges of the pool no block holds (and not wholly reserved): what nodes can still claim. */
  unclaimedBlocks?: number;
  /** Free addresses inside claimed blocks (for their nodes, or by borrowing). */
  freeInClaimedBlocks?: number;
  /** Free addresses in the unclaimed ranges (free − freeInClaimedBlocks). */
  freeInUnclaimedBlocks?: number;
  /** Allocations in the pool's blocks for a node other than the block's. */
  borrowed?: number;
  /** Nodes short of addresses in this pool, fewest free first, at most 10. */
  shortNodes?: ShortNodeStatus[];
  /** How many nodes are short (shortNodes lists the first 10). */
  shortNodeCount?: number;
  /**
   * The allocated count sampled every 30 min or more over the last 6 h (and one before, the
   * baseline), oldest first, at most 16: what forecasts are made from (core/allocator/forecast.ts).
   */
  allocationSamples?: { time: string; allocated: number }[];
  /** Ready, Allocatable, NearlyExhausted, Exhausted, Disabled (core's poolConditions). */
  conditions?: Condition[];
}

export interface IPPool extends KubeObject {
  metadata: ObjectMeta;
  spec: IPPoolSpec;
  status?: IPPoolStatus;
}

/** Who holds one allocated ordinal of a block. */
export interface Allocation {
  /** `<network>.<containerID>.<ifname>`; identity together with `podUID`. */
  handle: string;
  /** CNI network name (the handle's first part; stored because network names may contain dots). */
  network?: string;
  namespace?: string;
  pod?: string;
  podUID?: string;
  /** Node the address was allocated for (differs from the block's affinity when borrowed). */
  node: string;
  /** RFC 3339, seconds precision. */
  allocatedAt: string;
  /** Unique in the block; a release must carry it (when known) to free this allocation. */
  sequence: number;
}

/** A released ordinal waiting for reuse; `IPAMBlockSpec.freed` keeps them least recently freed first. */
interface FreedOrdinal {
  ordinal: number;
  /** RFC 3339, seconds precision. */
  releasedAt: string;
}

export interface IPAMBlockSpec {
  /** Block CIDR; the object's name is derived from it (see address/naming.ts). */
  cidr: string;
  /** Node that owns the block, or null when unowned (borrowable, releasable). */
  affinity: string | null;
  /** RFC 3339: when the current affinity was set (or the block created). */
  affinityClaimTime: string;
  /** Last sequence number handed out; seeded from the clock (ms) at creation. */
  sequence: number;
  /** Allocated ordinals, keyed by the ordinal in decimal ("0".."size-1"). */
  allocations: Record<string, Allocation>;
  /** Released ordinals in release order (head = least recently freed). */
  freed: FreedOrdinal[];
}

/**
 * Written only by the cluster controller through the status subresource (an UPDATE of the block
 * leaves it as stored, so the allocator's compare-and-swap writes never touch it).
 */
interface IPAMBlockStatus {
  /** `Trusted` (docs/design-core.md §Trusted blocks): False with the reason when ignored. */
  conditions?: Condition[];
}

export interface IPAMBlock extends KubeObject {
  metadata: ObjectMeta;
  spec: IPAMBlockSpec;
  status?: IPAMBlockStatus;
}

/** IPAMConfig `default`; every field optional on the wire, see config.ts for defaults. */
export interface IPAMConfigSpec {
  strictAffinity?: boolean;
  autoAllocateBlocks?: boolean;
  maxBlocksPerNode?: number;
  ipCooldownSeconds?: number;
  emptyBlockReleaseSeconds?: number;
  leakGracePeriodSeconds?: number;
  minFreeAddressesPerNode?: number;
  poolNearlyExhaustedPercent?: number;
}

export interface IPAMConfigObject extends KubeObject {
  metadata: ObjectMeta;
  spec: IPAMConfigSpec;
}

interface IPReservationSpec {
  /** CIDRs (or single addresses as /32, /128) never handed out automatically nor statically. */
  reservedCIDRs: string[];
}

export interface IPReservation extends KubeObject {
  metadata: ObjectMeta;
  spec: IPReservationSpec;
}

/**
 * What every node routes towards one node (docs/design-controller.md §IPAMNode): written only by
 * the cluster controller from all blocks, pools and Nodes; read by every agent's route planner
 * (docs/design-agent.md §Routes). Changes on a claim, a release, a borrow, a return of a borrowed
 * address, or a node address change — never on an allocation in the node's own block.
 */
export interface IPAMNodeSpec {
  /** The Node's first InternalIP of each family, canonical text, IPv4 first; [] when it has none. */
  addresses: string[];
  /** CIDRs of the node's trusted affine blocks that hold no node's address, sorted. */
  blocks: string[];
  /**
   * The node's addresses in trusted blocks not affine to it (borrowed, or in an unowned block),
   * as "address/32" or "address/128", sorted.
   */
  borrowed: string[];
  /** RFC 3339, seconds: when the controller last changed the lists above. */
  updatedAt?: string;
}

/** One per Node, same name, owned by it (deleted with it). */
export interface IPAMNode extends KubeObject {
  metadata: ObjectMeta;
  spec: IPAMNodeSpec;
}

/** The fields of a Pod the IPAM reads. */
export interface Pod extends KubeObject {
  spec?: { nodeName?: string; hostNetwork?: boolean };
  status?: { phase?: string; podIP?: string; podIPs?: { ip: string }[] };
}

/** Namespace or Node: only metadata (labels, annotations) matters to the IPAM. */
export type Namespace = KubeObject;
export type Node = KubeObject;
