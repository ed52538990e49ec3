/**
 * One podCIDR's part of the adoption plan (pure): the pool whose blocks it becomes, how many
 * blocks, which of them exist already, and what about the podCIDR itself stops adoption — an
 * IPv6 podCIDR, no pool, blocks larger than the podCIDR, an IPAMBlock over it that is another
 * node's or holds other pods' addresses.
 */
import { addressTextAt } from '../address/block-cidr.ts';
import { cidrCovers, cidrLast, cidrSize, cidrsOverlap, formatCidr, parseCidr } from '../address/ip.ts';
import type { Cidr, IPFamily } from '../address/ip.ts';
import { isPodCIDRPool } from '../allocator/pools.ts';
import type { PoolSnapshot } from '../allocator/pools.ts';
import type { IPAMBlock } from '../resources.ts';
import { blockTooLarge, ipv6PodCIDR, noPool, notPodCIDRPool, overlappingBlock } from './conflicts.ts';
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
  readonly blocks: BlockIndex;
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
    else if (!isPodCIDRPool(choice.pool)) conflicts.push(notPodCIDRPool({ node: name, podCIDR: text, pool }));
    if (blocks !== undefined)
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
  for (const { block, cidr } of overlapping(context.blocks, podCIDR)) {
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

/** Every IPAMBlock with its CIDR, sorted by family, then base address, and the largest block size per family. */
export interface BlockIndex {
  readonly entries: readonly { readonly block: IPAMBlock; readonly cidr: Cidr }[];
  /** Addresses in the largest block of each family (0 without blocks). */
  readonly widest: Readonly<Record<IPFamily, bigint>>;
}

/** The {@link BlockIndex} of `blocks` (unparsable CIDRs dropped). */
export function blocksByAddress(blocks: readonly IPAMBlock[]): BlockIndex {
  const entries = blocks
    .flatMap((block) => {
      const cidr = parseCidr(block.spec.cidr);
      return cidr ? [{ block, cidr }] : [];
    })
    .sort((a, b) => a.cidr.family - b.cidr.family || compare(a.cidr.base, b.cidr.base));
  const widest = { 4: 0n, 6: 0n };
  for (const { cidr } of entries)
    if (cidrSize(cidr) > widest[cidr.family]) widest[cidr.family] = cidrSize(cidr);
  return { entries, widest };
}

/**
 * The blocks overlapping `podCIDR`: a binary search for the first block that may reach into it —
 * none starts more than the largest block's size before it — then a scan to the podCIDR's last
 * address, so each podCIDR of a large cluster is judged against its few blocks, not every block.
 */
function overlapping(index: BlockIndex, podCIDR: Cidr): { block: IPAMBlock; cidr: Cidr }[] {
  const { entries } = index;
  const family = podCIDR.family;
  const from = podCIDR.base - index.widest[family];
  let low = 0;
  let high = entries.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    const b = entries[mid]?.cidr;
    if (b && (b.family < family || (b.family === family && b.base <= from))) low = mid + 1;
    else high = mid;
  }
  const found: { block: IPAMBlock; cidr: Cidr }[] = [];
  const last = cidrLast(podCIDR);
  for (let i = low; i < entries.length; i++) {
    const entry = entries[i];
    if (!entry || entry.cidr.family !== family || entry.cidr.base > last) break;
    if (cidrsOverlap(entry.cidr, podCIDR)) found.push(entry);
  }
  return found;
}

function compare(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
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
