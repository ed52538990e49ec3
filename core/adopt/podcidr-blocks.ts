/**
 * PodCIDR pools (docs/design-core.md §PodCIDR pools), pure. A pool with `spec.podCIDRBlocks`
 * holds each node's `spec.podCIDRs` as that node's blocks: the tiles of blockSize of every
 * podCIDR the pool covers exist, affine to the node — created by the controller, for nodes that
 * joined before or after, whether or not their pods use blockipam yet. So a host-local cluster's
 * addresses keep their node (a block per /24 podCIDR keeps exactly host-local's reservations:
 * network, gateway `.1`, broadcast), and no node takes an address of another node's podCIDR.
 *
 * Rules, each applied once here and called by every part:
 * - a node never claims a block of a podCIDR pool (the controller lists such a pool `podcidr`, not
 *   `usable`, for the claims policy; core's claim and pre-claim skip it), never borrows from one,
 *   and never releases one idle (only the controller's deleted-node cleanup frees them);
 * - a tile with no block gets one, affine to its node; an unowned block at a tile is given to
 *   its node; a block at a tile affine to another node is a conflict, left alone and reported;
 * - a podCIDR cut into more than {@link MAX_TILES_PER_PODCIDR} blocks (an IPv6 /64, or a pool whose
 *   blocks are much smaller than the podCIDRs) is a conflict: adopt it with blocks of its size.
 */
import { blockNameOf } from '../address/block-cidr.ts';
import { cidrCovers, cidrSize, formatCidr, parseCidr } from '../address/ip.ts';
import type { Cidr } from '../address/ip.ts';
import { isPodCIDRPool, poolBlockSize, usablePools } from '../allocator/pools.ts';
import { newBlock } from '../block/block.ts';
import { POOL_LABEL, relabel } from '../block/labels.ts';
import { rfc3339 } from '../time.ts';
import type { IPAMBlock, IPPool } from '../resources.ts';
import { blocksPerPodCIDR, podCIDRsOf } from './podcidr.ts';
import type { PodCIDRNode } from './podcidr.ts';

/** At most this many blocks per podCIDR: 16 /28s of a /24, one /24 of a /24. */
export const MAX_TILES_PER_PODCIDR = 16;

/** A podCIDR tile that cannot become its node's block, and why. */
export interface PodCIDRBlockConflict {
  readonly node: string;
  /** The podCIDR, or the tile, in canonical text. */
  readonly cidr: string;
  readonly message: string;
}

/** What the controller writes so that every podCIDR tile is its node's block. */
export interface PodCIDRBlockPlan {
  /** New blocks, affine to their node, as core's claim creates them. */
  readonly create: readonly IPAMBlock[];
  /** Unowned blocks at a tile, each with the node to give it to. */
  readonly assign: readonly { readonly block: IPAMBlock; readonly node: string }[];
  readonly conflicts: readonly PodCIDRBlockConflict[];
}

/**
 * The plan for every node's podCIDRs inside a podCIDR pool. Pools considered: podCIDR pools that
 * are not shadowed by an older overlapping pool and not being deleted — disabled ones included
 * (disabled is the safe state while host-local still hands the addresses out: the blocks are
 * reserved, nothing is handed out of them). Nodes in name order; the same input gives the same
 * plan.
 */
export function planPodCIDRBlocks(input: {
  readonly nodes: readonly PodCIDRNode[];
  readonly pools: readonly IPPool[];
  readonly blocks: readonly IPAMBlock[];
  readonly nowMs: number;
}): PodCIDRBlockPlan {
  const { usable } = usablePools(input.pools.map((p) => ({ ...p, spec: { ...p.spec, disabled: false } })));
  const pools = usable.filter(isPodCIDRPool).filter((p) => !p.metadata.deletionTimestamp);
  const byName = new Map(input.blocks.map((b) => [b.metadata.name, b]));
  const create: IPAMBlock[] = [];
  const assign: { block: IPAMBlock; node: string }[] = [];
  const conflicts: PodCIDRBlockConflict[] = [];
  const nodes = [...input.nodes].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  for (const node of nodes) {
    const name = node.metadata.name;
    for (const podCIDR of podCIDRsOf(node)) {
      const pool = pools.find((p) => cidrCovers(parseCidr(p.spec.cidr)!, podCIDR));
      if (!pool) continue;
      const blockSize = poolBlockSize(pool);
      const tiles = blocksPerPodCIDR(podCIDR, blockSize);
      if (tiles === undefined || tiles > MAX_TILES_PER_PODCIDR) {
        conflicts.push({
          node: name,
          cidr: formatCidr(podCIDR),
          message: `podCIDR ${formatCidr(podCIDR)} of node ${name} ${tiles === undefined ? `is smaller than a /${blockSize} block` : `would be ${tiles} /${blockSize} blocks (at most ${MAX_TILES_PER_PODCIDR})`} of IPPool ${pool.metadata.name}: use a pool whose blockSize is the podCIDR's prefix length`,
        });
        continue;
      }
      for (const tile of tilesOf(podCIDR, blockSize)) {
        const existing = byName.get(blockNameOf(tile));
        if (!existing)
          create.push(newBlock({ cidr: tile, pool: pool.metadata.name, node: name, nowMs: input.nowMs }));
        else if (existing.spec.affinity === null) assign.push({ block: existing, node: name });
        else if (existing.spec.affinity !== name)
          conflicts.push({
            node: name,
            cidr: formatCidr(tile),
            message: `IPAMBlock ${existing.metadata.name} in podCIDR ${formatCidr(podCIDR)} of node ${name} is affine to node ${existing.spec.affinity}: the node whose podCIDR it is gets no block there until it is released (ipamctl show --node ${existing.spec.affinity})`,
          });
      }
    }
  }
  return { create, assign, conflicts };
}

/** The blocks of prefix `blockSize` that tile `podCIDR`, in address order. */
function tilesOf(podCIDR: Cidr, blockSize: number): Cidr[] {
  const step = cidrSize({ ...podCIDR, prefixLength: blockSize });
  const count = Number(cidrSize(podCIDR) / step);
  return Array.from({ length: count }, (_, i) => ({
    family: podCIDR.family,
    base: podCIDR.base + BigInt(i) * step,
    prefixLength: blockSize,
  }));
}

/**
 * `block` (unowned, at a tile of `node`'s podCIDR) given to `node` as core's claim would make it:
 * affinity, `affinityClaimTime` now, and core's labels (the node's `affine` label among them — a
 * block without it is not trusted, routed or found by the node).
 */
export function podCIDRBlockGiven(block: IPAMBlock, node: string, nowMs: number): IPAMBlock {
  const spec = { ...block.spec, affinity: node, affinityClaimTime: rfc3339(nowMs) };
  const pool = block.metadata.labels?.[POOL_LABEL] ?? '';
  const cidr = parseCidr(spec.cidr)!;
  return {
    ...block,
    metadata: { ...block.metadata, labels: relabel(block.metadata.labels, spec, pool, cidr.family) },
    spec,
  };
}
