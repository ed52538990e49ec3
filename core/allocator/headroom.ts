/**
 * Node headroom, cluster-wide (pure): per existing node and per pool it may pre-claim in, the
 * free addresses in the node's affine blocks of that pool — the node agent's measure
 * (docs/design-agent.md §Pre-claim) — and whether the node is **short**: below the watermark with
 * no way to claim another block. The controller reports short nodes in IPPool.status and the
 * headroom as a metric; the agent acts on its own node's headroom.
 *
 * Rules:
 * - A pool is eligible for a node when it is usable (the caller passes core's usablePools), its
 *   nodeSelector matches the node's labels, and it is `Automatic` — or `Manual` and requested by
 *   a pending pod on the node ({@link requestedManualPools}: its own or its namespace's
 *   `ipam.blockipam.io/ippools` annotation), the one demand a Manual pool has.
 * - free = Σ over the node's affine blocks of the pool (spec.affinity, pool label) of assignable
 *   ordinals − allocations; addresses the node borrowed elsewhere do not count, nor do a frozen
 *   block's (core/block/frozen.ts: never allocated from, so no room: the node claims another).
 * - short when free < max(minFreeAddressesPerNode, 1) and the node cannot claim: the pool holds
 *   the nodes' podCIDRs, whose blocks only the controller creates (`PodCIDRBlocks`), autoAllocateBlocks
 *   is false (`AutoAllocateOff`), the node holds maxBlocksPerNode affine blocks of the pool's
 *   family, frozen ones not counted (`MaxBlocksPerNode`), or the pool has no unclaimed block
 *   (`NoUnclaimedBlocks`), checked in that order.
 */
import { blockFree, cidrOf } from '../block/block.ts';
import { isAllocatable } from '../block/frozen.ts';
import { POOL_LABEL } from '../block/labels.ts';
import type { IPAMSettings } from '../config.ts';
import type { IPAMBlock, IPPool } from '../resources.ts';
import { POOLS_ANNOTATION } from '../annotations.ts';
import { isPodCIDRPool, poolCidr, servesNode } from './pools.ts';

export type ShortReason = 'PodCIDRBlocks' | 'AutoAllocateOff' | 'MaxBlocksPerNode' | 'NoUnclaimedBlocks';

/** A node as the headroom reads it (a Node object fits). */
export interface HeadroomNode {
  readonly metadata: { readonly name: string; readonly labels?: Readonly<Record<string, string>> };
}

export interface NodeHeadroomInput {
  /** The usable pools (core's usablePools(...).usable); Manual ones only where {@link requested}. */
  readonly pools: readonly IPPool[];
  /**
   * Per node name, the Manual pools pending pods on it request ({@link requestedManualPools});
   * absent: no Manual pool is counted.
   */
  readonly requested?: ReadonlyMap<string, ReadonlySet<string>>;
  /** The nodes that exist. */
  readonly nodes: readonly HeadroomNode[];
  /** Every block (any pool, any node). */
  readonly blocks: readonly IPAMBlock[];
  readonly settings: Pick<
    IPAMSettings,
    'minFreeAddressesPerNode' | 'maxBlocksPerNode' | 'autoAllocateBlocks'
  >;
  /** Per pool name, poolUtilization's unclaimedBlocks; a pool missing here counts as having some. */
  readonly unclaimedBlocks: ReadonlyMap<string, bigint>;
}

/** One node's headroom in one pool. */
export interface NodeHeadroom {
  readonly node: string;
  readonly pool: string;
  /** Free addresses in the node's affine blocks of the pool. */
  readonly free: number;
  /** The node's affine blocks of the pool, frozen ones included. */
  readonly blocks: number;
  /** Set when the node is short in this pool: below the watermark and {@link cannotClaim}. */
  readonly short?: ShortReason;
  /** Set when the node could not claim a block of this pool now, whatever its free count: why. */
  readonly cannotClaim?: ShortReason;
}

/**
 * Why a node could not claim a block of a pool now (undefined: it could), checked in this order:
 * the pool is a podCIDR pool; autoAllocateBlocks is false; the node holds maxBlocksPerNode blocks
 * of the pool's family; the pool has no unclaimed block. The one rule of nodeHeadroom's `short`
 * and `cannotClaim`.
 * @param f.held the node's affine blocks of the pool's family (any pool), frozen ones not counted
 */
function claimBlockedBy(f: {
  podCIDRBlocks: boolean;
  autoAllocateBlocks: boolean;
  held: number;
  maxBlocksPerNode: number;
  /** poolUtilization's unclaimedBlocks; undefined counts as some. */
  unclaimedBlocks: bigint | undefined;
}): ShortReason | undefined {
  if (f.podCIDRBlocks) return 'PodCIDRBlocks';
  if (!f.autoAllocateBlocks) return 'AutoAllocateOff';
  if (f.held >= f.maxBlocksPerNode) return 'MaxBlocksPerNode';
  if ((f.unclaimedBlocks ?? 1n) <= 0n) return 'NoUnclaimedBlocks';
  return undefined;
}

/**
 * Why a claim would fail, as a person reads it, naming the setting and what follows for the
 * node's pods: with strictAffinity an ADD fails once the node's blocks of the pool are full; else
 * it borrows from other nodes' blocks.
 */
export function cannotClaimText(
  reason: ShortReason,
  f: { pool: string; family: number; held: number; maxBlocksPerNode: number; strictAffinity: boolean },
): string {
  const then = f.strictAffinity
    ? 'with strictAffinity, ADDs fail once its blocks are full'
    : "ADDs borrow from other nodes' blocks once its blocks are full";
  switch (reason) {
    case 'PodCIDRBlocks':
      return `IP pool "${f.pool}" holds nodes' podCIDRs (spec.podCIDRBlocks): the node's blocks there are its podCIDR's, created by the controller, and it claims no other; ADDs fail once they are full`;
    case 'AutoAllocateOff':
      return `autoAllocateBlocks is false (IPAMConfig "default"): the node claims no block; ${then}`;
    case 'MaxBlocksPerNode':
      return `the node holds ${f.held} IPv${f.family} block${f.held === 1 ? '' : 's'}, the maxBlocksPerNode limit (${f.maxBlocksPerNode}, IPAMConfig "default"); ${then}`;
    case 'NoUnclaimedBlocks':
      return `IP pool "${f.pool}" has no unclaimed block left; ${then}`;
  }
}

/**
 * One entry per (eligible pool, node), pools in the given order, nodes by name.
 * Cost: O(blocks + pools × nodes).
 */
export function nodeHeadroom(input: NodeHeadroomInput): NodeHeadroom[] {
  const { settings } = input;
  const key = (node: string, pool: string): string => `${node}\u0000${pool}`;
  const free = new Map<string, number>();
  const count = new Map<string, number>();
  const held = new Map<string, number>();
  for (const block of input.blocks) {
    const node = block.spec.affinity;
    if (node === null) continue;
    const k = key(node, block.metadata.labels?.[POOL_LABEL] ?? '');
    free.set(k, (free.get(k) ?? 0) + blockFree(block));
    count.set(k, (count.get(k) ?? 0) + 1);
    if (!isAllocatable(block)) continue; // no room, and not counted against maxBlocksPerNode
    const f = key(node, String(cidrOf(block).family));
    held.set(f, (held.get(f) ?? 0) + 1);
  }
  const watermark = Math.max(settings.minFreeAddressesPerNode, 1);
  const nodes = [...input.nodes].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  const result: NodeHeadroom[] = [];
  for (const pool of input.pools) {
    const name = pool.metadata.name;
    const family = String(poolCidr(pool).family);
    for (const node of nodes) {
      const n = node.metadata.name;
      if (!servesNode(pool, node.metadata.labels ?? {}, input.requested?.get(n))) continue;
      const room = {
        node: n,
        pool: name,
        free: free.get(key(n, name)) ?? 0,
        blocks: count.get(key(n, name)) ?? 0,
      };
      const cannotClaim = claimBlockedBy({
        podCIDRBlocks: isPodCIDRPool(pool),
        autoAllocateBlocks: settings.autoAllocateBlocks,
        held: held.get(key(n, family)) ?? 0,
        maxBlocksPerNode: settings.maxBlocksPerNode,
        unclaimedBlocks: input.unclaimedBlocks.get(name),
      });
      const short = room.free < watermark ? cannotClaim : undefined;
      result.push({ ...room, ...(short ? { short } : {}), ...(cannotClaim ? { cannotClaim } : {}) });
    }
  }
  return result;
}

/** A pod as {@link requestedManualPools} reads it (core's Pod fits). */
export interface RequestingPod {
  readonly metadata: { readonly namespace?: string; readonly annotations?: Readonly<Record<string, string>> };
  readonly spec?: { readonly nodeName?: string; readonly hostNetwork?: boolean };
  readonly status?: { readonly phase?: string };
}

/**
 * Per node, the Manual pools its pending pods request (pure): a pod bound to a node
 * (`spec.nodeName`), in phase Pending (or none yet), not on the host network, whose own
 * `ipam.blockipam.io/ippools` annotation — else its namespace's — names the pool by name or by
 * its `spec.cidr`. A malformed annotation names nothing (the ADD reports it).
 * @param namespaceAnnotations a namespace's annotations by name (undefined: not known)
 */
export function requestedManualPools(
  pods: readonly RequestingPod[],
  namespaceAnnotations: (namespace: string) => Readonly<Record<string, string>> | undefined,
  pools: readonly IPPool[],
): Map<string, Set<string>> {
  const manual = pools.filter((p) => (p.spec.assignmentMode ?? 'Automatic') !== 'Automatic');
  const requested = new Map<string, Set<string>>();
  if (manual.length === 0) return requested;
  for (const pod of pods) {
    const node = pod.spec?.nodeName;
    const phase = pod.status?.phase;
    if (!node || pod.spec?.hostNetwork === true || (phase !== undefined && phase !== 'Pending')) continue;
    // the pod's list overrides its namespace's (core/node-ipam/annotations.ts reads them so)
    const own = poolList(pod.metadata.annotations?.[POOLS_ANNOTATION]);
    const names =
      own ?? poolList(namespaceAnnotations(pod.metadata.namespace ?? '')?.[POOLS_ANNOTATION]) ?? [];
    for (const pool of manual)
      if (names.includes(pool.metadata.name) || names.includes(pool.spec.cidr))
        requested.set(node, (requested.get(node) ?? new Set()).add(pool.metadata.name));
  }
  return requested;
}

/**
 * The annotation's pool list (a JSON list of strings); undefined when absent or empty (the next
 * one is read); a malformed one names nothing (its ADD fails, saying why).
 */
function poolList(text: string | undefined): string[] | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  try {
    const v = JSON.parse(text) as unknown;
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) return [];
    return v.length > 0 ? v : undefined;
  } catch {
    return [];
  }
}
