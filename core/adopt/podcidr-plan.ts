/**
 * One podCIDR's part of the adoption plan (pure): the pool whose blocks it becomes, how many
 * blocks, which of them exist already, and what about the podCIDR itself stops adoption — an
 * IPv6 podCIDR, no pool, blocks larger than the podCIDR, an IPAMBlock over it that is another
 * node's or holds other pods' addresses.
 */
import { addressTextAt } from '../address/block-cidr.ts';
import { cidrCovers, cidrsOverlap, formatCidr } from '../address/ip.ts';
import type { Cidr, IPFamily } from '../address/ip.ts';
import type { PoolSnapshot } from '../allocator/pools.ts';
import type { IPAMBlock } from '../resources.ts';
import { blockTooLarge, ipv6PodCIDR, noPool, overlappingBlock } from './conflicts.ts';
import type { AdoptionConflict, AdoptionNote, PodName } from './conflicts.ts';
import { blocksPerPodCIDR, choosePool, podCIDRBlockSize } from './podcidr.ts';
import type { PodCIDRNode } from './podcidr.ts';

/** A live pod holding an address, and its node. */
export interface Holder extends PodName {
  readonly node: string;
}

/** What every podCIDR's plan reads, computed once per plan. */
export interface PlanContext {
  readonly snapshot: PoolSnapshot;
  readonly blocks: readonly { readonly block: IPAMBlock; readonly cidr: Cidr }[];
  /** Live pods holding each address (canonical text). */
  readonly holders: ReadonlyMap<string, readonly Holder[]>;
  /** The smallest CIDR holding every node's IPv4 podCIDR: the pool to suggest. */
  readonly clusterCidr: Cidr | undefined;
}

/** One podCIDR as blockipam would hold it. */
export interface PodCIDRPlan {
  /** Canonical CIDR text. */
  readonly cidr: string;
  readonly family: IPFamily;
  /** The pool its blocks belong to, its blockSize (prefix length) and the number of blocks; absent when no pool tiles it. */
  readonly pool?: string;
  /** Present (true) when that pool is disabled: nothing is handed out from it until it is enabled. */
  readonly poolDisabled?: true;
  readonly blockSize?: number;
  readonly blocks?: number;
  /** IPAMBlocks of that tiling that exist already, affine to the node or to none (names, sorted). */
  readonly existingBlocks: readonly string[];
  /** False when something about the podCIDR itself stops adoption (its conflicts say what). */
  readonly adoptable: boolean;
}

/** A podCIDR's plan with its conflicts and notes. */
export interface PodCIDRVerdict {
  readonly plan: PodCIDRPlan;
  readonly conflicts: readonly AdoptionConflict[];
  readonly notes: readonly AdoptionNote[];
}

/**
 * Plans one podCIDR of `node`. The pool is core's choice for the node (choosePool); a pool tiles
 * the podCIDR when its blockSize is at least the podCIDR's prefix length (2^(blockSize − prefix)
 * blocks). Every IPAMBlock overlapping the podCIDR is judged (blocksOver). An IPv6 podCIDR is
 * not planned: `ipv6-podcidr`.
 */
export function planPodCIDR(context: PlanContext, node: PodCIDRNode, cidr: Cidr): PodCIDRVerdict {
  const name = node.metadata.name;
  const text = formatCidr(cidr);
  if (cidr.family === 6)
    return {
      plan: { cidr: text, family: 6, existingBlocks: [], adoptable: false },
      conflicts: [ipv6PodCIDR({ node: name, podCIDR: text })],
      notes: [],
    };
  const want = podCIDRBlockSize(cidr);
  const choice = choosePool(context.snapshot, cidr, node.metadata.labels ?? {});
  const conflicts: AdoptionConflict[] = [];
  const notes: AdoptionNote[] = [];
  let tiling: { pool: string; poolDisabled?: true; blockSize: number; blocks: number } | undefined;
  if (!choice.pool) {
    const suggestion =
      want !== undefined && context.clusterCidr
        ? { cidr: formatCidr(context.clusterCidr), blockSize: want }
        : undefined;
    conflicts.push(noPool({ node: name, podCIDR: text, why: choice.why, suggestion }));
  } else {
    const pool = choice.pool.metadata.name;
    const blocks = blocksPerPodCIDR(cidr, choice.blockSize);
    if (blocks === undefined)
      conflicts.push(blockTooLarge({ node: name, podCIDR: text, pool, blockSize: choice.blockSize, want }));
    else
      tiling = {
        pool,
        ...(choice.disabled ? { poolDisabled: true } : {}),
        blockSize: choice.blockSize,
        blocks,
      };
  }
  if (tiling && tiling.blocks > 1)
    notes.push({
      kind: 'split-podcidr',
      node: name,
      message: `IPPool ${tiling.pool} cuts podCIDR ${text} into ${tiling.blocks} /${tiling.blockSize} blocks: each reserves its own network, gateway and broadcast address, and new pods in all but the first get their block's gateway, not host-local's .1`,
    });
  const over = blocksOver(context, name, cidr, tiling?.blockSize);
  conflicts.push(...over.conflicts);
  return {
    plan: {
      cidr: text,
      family: 4,
      ...(tiling ?? {}),
      existingBlocks: over.existing,
      adoptable: conflicts.length === 0,
    },
    conflicts,
    notes,
  };
}

// 3 addresses named per block: the count says the rest, `ipamctl show --blocks` lists them.
const NAMED_ALLOCATIONS = 3;

/**
 * Every IPAMBlock overlapping the podCIDR: one conflict per block that is not one of the tiling's
 * blocks (when the tiling is known), is affine to another node, or holds an allocation that is
 * not the address of a live pod of `node` recorded for that pod; the others are the tiling's
 * blocks that exist already.
 */
function blocksOver(
  context: PlanContext,
  node: string,
  podCIDR: Cidr,
  blockSize: number | undefined,
): { existing: string[]; conflicts: AdoptionConflict[] } {
  const existing: string[] = [];
  const conflicts: AdoptionConflict[] = [];
  for (const { block, cidr } of context.blocks) {
    if (!cidrsOverlap(cidr, podCIDR)) continue;
    const problems: string[] = [];
    if (!cidrCovers(podCIDR, cidr)) problems.push(`reaches beyond the podCIDR (${formatCidr(cidr)})`);
    else if (blockSize !== undefined && cidr.prefixLength !== blockSize)
      problems.push(`is a /${cidr.prefixLength} block, not one of the podCIDR's /${blockSize} blocks`);
    const affinity = block.spec.affinity;
    if (affinity !== null && affinity !== node) problems.push(`is affine to node ${affinity}`);
    const foreign = foreignAllocations(context, node, block, cidr);
    if (foreign.length > 0) {
      const named = foreign.slice(0, NAMED_ALLOCATIONS).join(', ');
      const more =
        foreign.length > NAMED_ALLOCATIONS ? ` and ${foreign.length - NAMED_ALLOCATIONS} more` : '';
      problems.push(`holds ${foreign.length} address(es) not of node ${node}'s pods: ${named}${more}`);
    }
    const name = block.metadata.name;
    if (problems.length > 0)
      conflicts.push(overlappingBlock({ node, podCIDR: formatCidr(podCIDR), block: name, problems }));
    else if (blockSize !== undefined) existing.push(name);
  }
  return { existing: existing.sort(), conflicts };
}

/** The block's allocations that are not the address of the live pod of `node` they name, as text. */
function foreignAllocations(context: PlanContext, node: string, block: IPAMBlock, cidr: Cidr): string[] {
  return Object.entries(block.spec.allocations).flatMap(([key, allocation]) => {
    const address = addressTextAt(cidr, Number(key));
    const own = (context.holders.get(address) ?? []).some(
      (h) =>
        h.node === node &&
        allocation.node === node &&
        h.namespace === allocation.namespace &&
        h.name === allocation.pod,
    );
    if (own) return [];
    const owner = allocation.pod
      ? `pod ${allocation.namespace ?? ''}/${allocation.pod}`
      : `handle ${allocation.handle}`;
    return [`${address} (${owner} on node ${allocation.node})`];
  });
}
