/**
 * The node's headroom and what to do about it (docs/design-agent.md §Pre-claim), pure — one
 * rule for the agent's pre-claim and `ipamctl show --node`: from the
 * node's affine blocks, the pool snapshot and the clock, which pools get one more block and which
 * idle blocks go.
 *
 * Rules:
 * - A pool is **eligible** for the node when it is usable (enabled, not being deleted, not
 *   shadowed by an older overlapping pool), `Automatic`, and its nodeSelector matches the node's
 *   labels (its namespaceSelector is not checked: some namespace may use it on this node).
 * - **free(pool)** = Σ over the node's affine blocks of that pool of (assignable ordinals −
 *   allocations). Addresses the node borrowed in other nodes' blocks never count: they are not
 *   the node's headroom (with strictAffinity they could not even be used). Nor does a frozen
 *   block (core/block/frozen.ts): it is never allocated from, so its free addresses are no room.
 * - **Claim** one block of an eligible pool when free(pool) < minFreeAddressesPerNode, unless
 *   autoAllocateBlocks is false or the node holds maxBlocksPerNode affine blocks of that family,
 *   frozen ones not counted (then the pool is reported `atLimit`: pods fall back to borrowing, or
 *   fail with strictAffinity).
 * - **Release** an affine block that has been empty for max(emptyBlockReleaseSeconds,
 *   ipCooldownSeconds), unless it is the node's last unfrozen affine block of its family, or
 *   releasing it would take an eligible pool below the watermark (that would only make the next
 *   pass claim again: ping-pong). If every unfrozen block of the family is idle, the first of them
 *   by name stays. An idle frozen block always
 *   goes: it is no room, and keeping it instead of a block the node can allocate from would only
 *   make the node claim again.
 * - A **podCIDR pool** (pools.ts isPodCIDRPool) gets no claim — its blocks are the node's
 *   podCIDRs, created by the controller — and its blocks are never released idle.
 */
import type { IPFamily } from '../address/ip.ts';
import { blockFree, cidrOf, emptySinceMs } from '../block/block.ts';
import { isAllocatable } from '../block/frozen.ts';
import { POOL_LABEL } from '../block/labels.ts';
import type { IPAMBlock, IPPool } from '../resources.ts';
import { isPodCIDRPool, poolCidr, servesNode, type PoolSnapshot } from './pools.ts';

/** What the planner looks at. */
export interface UpkeepView {
  readonly node: string;
  readonly nodeLabels: Readonly<Record<string, string>>;
  /** Built by core's snapshotOf from the watched config, pools and reservations. */
  readonly snapshot: PoolSnapshot;
  /** Blocks whose affinity is this node (any pool, both families). */
  readonly affine: readonly IPAMBlock[];
  readonly nowMs: number;
}

/** The headroom of one eligible pool on the node. */
interface PoolHeadroom {
  readonly pool: string;
  readonly family: IPFamily;
  /** Free addresses in the node's affine blocks of the pool (frozen blocks count none). */
  readonly free: number;
  /** The node's affine blocks of the pool, frozen ones included. */
  readonly blocks: number;
}

export interface UpkeepPlan {
  /** Every eligible pool, in the snapshot's order (oldest first). */
  readonly headroom: readonly PoolHeadroom[];
  /** Pools to claim one block in now (at most one each). */
  readonly claims: readonly IPPool[];
  /** Eligible pools under the watermark whose family is at maxBlocksPerNode. */
  readonly atLimit: readonly string[];
  /** Idle blocks to release now. */
  readonly releases: readonly IPAMBlock[];
  /** The watermark used (IPAMConfig minFreeAddressesPerNode). */
  readonly watermark: number;
}

/** The usable Automatic pools whose nodeSelector matches the node (pools.ts servesNode). */
export function eligiblePools(
  snapshot: PoolSnapshot,
  nodeLabels: Readonly<Record<string, string>>,
): IPPool[] {
  return snapshot.usable.filter((pool) => servesNode(pool, nodeLabels));
}

const poolOf = (block: IPAMBlock): string => block.metadata.labels?.[POOL_LABEL] ?? '';

/** Plans one pass. */
export function planUpkeep(view: UpkeepView): UpkeepPlan {
  const { settings } = view.snapshot;
  const watermark = settings.minFreeAddressesPerNode;
  const eligible = eligiblePools(view.snapshot, view.nodeLabels);
  const free = new Map<string, number>();
  const count = new Map<string, number>();
  for (const block of view.affine) {
    free.set(poolOf(block), (free.get(poolOf(block)) ?? 0) + blockFree(block));
    count.set(poolOf(block), (count.get(poolOf(block)) ?? 0) + 1);
  }
  const held: Record<IPFamily, number> = { 4: 0, 6: 0 };
  for (const block of view.affine) if (isAllocatable(block)) held[cidrOf(block).family] += 1;
  const headroom = eligible.map((pool) => ({
    pool: pool.metadata.name,
    family: poolCidr(pool).family,
    free: free.get(pool.metadata.name) ?? 0,
    blocks: count.get(pool.metadata.name) ?? 0,
  }));
  const claims: IPPool[] = [];
  const atLimit: string[] = [];
  if (watermark > 0 && settings.autoAllocateBlocks)
    for (const [i, pool] of eligible.entries()) {
      const room = headroom[i];
      if (!room || room.free >= watermark || isPodCIDRPool(pool)) continue;
      if (held[room.family] >= settings.maxBlocksPerNode) atLimit.push(pool.metadata.name);
      else {
        claims.push(pool);
        held[room.family] += 1;
      }
    }
  const eligibleNames = new Set(eligible.map((p) => p.metadata.name));
  return {
    headroom,
    claims,
    atLimit,
    releases: planReleases(view, { watermark, free, eligible: eligibleNames }),
    watermark,
  };
}

function planReleases(
  view: UpkeepView,
  pools: { watermark: number; free: Map<string, number>; eligible: ReadonlySet<string> },
): IPAMBlock[] {
  const { settings } = view.snapshot;
  const minAgeMs = Math.max(settings.emptyBlockReleaseSeconds, settings.ipCooldownSeconds) * 1000;
  const free = new Map(pools.free);
  const releases: IPAMBlock[] = [];
  const podCIDRPools = new Set(view.snapshot.pools.filter(isPodCIDRPool).map((p) => p.metadata.name));
  for (const family of [4, 6] as const) {
    const group = view.affine
      .filter((b) => cidrOf(b).family === family)
      .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    const idle = group.filter((block) => {
      if (podCIDRPools.has(poolOf(block))) return false; // the node's podCIDR: kept while it is
      const since = emptySinceMs(block, view.nowMs);
      return since !== undefined && view.nowMs - since >= minAgeMs;
    });
    // Keep one unfrozen block per (node, family): when all are idle, the first by name stays.
    const allocatable = group.filter(isAllocatable);
    const idleAllocatable = idle.filter(isAllocatable);
    if (idleAllocatable.length > 0 && idleAllocatable.length === allocatable.length)
      idle.splice(idle.indexOf(idleAllocatable[0]!), 1);
    let remaining = allocatable.length;
    for (const block of idle) {
      if (isAllocatable(block)) {
        if (remaining <= 1) continue;
        const pool = poolOf(block);
        const after = (free.get(pool) ?? 0) - blockFree(block);
        if (pools.eligible.has(pool) && after < pools.watermark) continue;
        free.set(pool, after);
        remaining -= 1;
      }
      releases.push(block);
    }
  }
  return releases;
}
