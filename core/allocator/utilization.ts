/**
 * Pool utilisation (Calico's GetUtilization, Cilium's Allocator.Capacity): one function for the
 * controller's IPPool.status and metrics (and ipamctl show). Pure, BigInt: an IPv6 /48 pool
 * holds 2^74 /122 blocks.
 */
import { blockCapacity } from '../address/block-cidr.ts';
import { bitsOf, cidrCovers, cidrLast, cidrSize, parseCidr } from '../address/ip.ts';
import type { Cidr } from '../address/ip.ts';
import type { IPAMBlock, IPPool } from '../resources.ts';
import { poolBlockSize, poolCidr } from './pools.ts';

/** One pool's utilisation. */
export interface PoolUtilization {
  /** Effective block prefix length (spec.blockSize, else 26 / 122). */
  blockSize: number;
  /** Assignable addresses if the whole pool were carved into blocks (reserved ordinals excluded). */
  capacity: bigint;
  /** Allocated addresses in the blocks inside the pool. */
  allocated: bigint;
  /** Addresses of the pool inside IPReservations (merged; block reserved ordinals among them included). */
  reserved: bigint;
  /** capacity − allocated − reserved, never below 0. */
  free: bigint;
  /** Blocks claimed inside the pool. */
  blocks: number;
  /**
   * Block-sized ranges of the pool a node can still claim: overlapping no block of any size
   * and not wholly inside an IPReservation (the claim never takes those either).
   */
  unclaimedBlocks: bigint;
  /**
   * Free addresses inside claimed blocks (Σ assignable − allocated − reserved per block, each
   * never below 0): usable only by the blocks' nodes, or by borrowing.
   */
  freeInClaimedBlocks: bigint;
  /** free − freeInClaimedBlocks, never below 0: what new claims can still hand out. */
  freeInUnclaimedBlocks: bigint;
  /** Allocations in the pool's blocks for a node other than the block's affinity (or unowned). */
  borrowed: bigint;
}

/**
 * Utilisation of `pool` from the blocks (any, filtered by CIDR) and the reservations' CIDRs.
 * Cost: O(blocks × reservations + (blocks + reservations) log (blocks + reservations)).
 */
export function poolUtilization(
  pool: IPPool,
  blocks: readonly IPAMBlock[],
  reservations: readonly Cidr[],
): PoolUtilization {
  const cidr = poolCidr(pool);
  const blockSize = poolBlockSize(pool);
  const block: Cidr = { family: cidr.family, base: cidr.base, prefixLength: blockSize };
  const perBlock = BigInt(blockCapacity(block));
  const slotBits = BigInt(bitsOf(cidr.family) - blockSize);
  const capacity = (cidrSize(cidr) >> slotBits) * perBlock;
  const family = reservations.filter((r) => r.family === cidr.family);
  let allocated = 0n;
  let borrowed = 0n;
  let freeInClaimedBlocks = 0n;
  let count = 0;
  const taken: Range[] = [];
  for (const b of blocks) {
    const bc = parseCidr(b.spec.cidr);
    if (!bc || !cidrCovers(cidr, bc)) continue;
    count += 1;
    const held = Object.values(b.spec.allocations);
    allocated += BigInt(held.length);
    borrowed += BigInt(held.filter((a) => a.node !== b.spec.affinity).length);
    const free = BigInt(blockCapacity(bc) - held.length) - reservedIn(bc, family);
    if (free > 0n) freeInClaimedBlocks += free;
    taken.push([(bc.base - cidr.base) >> slotBits, (cidrLast(bc) - cidr.base) >> slotBits]);
  }
  const slot = 1n << slotBits;
  for (const [a, b] of clipped(cidr, family)) {
    // Slots wholly inside [a, b]: the first slot starting at or after a, up to the last ending at or before b.
    const first = (a - cidr.base + slot - 1n) >> slotBits;
    const last = ((b - cidr.base + 1n) >> slotBits) - 1n;
    if (first <= last) taken.push([first, last]);
  }
  const reserved = reservedIn(cidr, family);
  const free = capacity - allocated - reserved;
  const nonNegative = (n: bigint): bigint => (n > 0n ? n : 0n);
  return {
    blockSize,
    capacity,
    allocated,
    reserved,
    free: nonNegative(free),
    blocks: count,
    unclaimedBlocks: nonNegative((cidrSize(cidr) >> slotBits) - unionSize(taken)),
    freeInClaimedBlocks,
    freeInUnclaimedBlocks: nonNegative(free - freeInClaimedBlocks),
    borrowed,
  };
}

/** An inclusive range of addresses or block slots. */
type Range = readonly [bigint, bigint];

/** The reservations' ranges clipped to `cidr`, sorted by start. */
function clipped(cidr: Cidr, reservations: readonly Cidr[]): Range[] {
  const first = cidr.base;
  const last = cidrLast(cidr);
  return reservations
    .filter((r) => r.family === cidr.family)
    .map((r): Range => [r.base > first ? r.base : first, cidrLast(r) < last ? cidrLast(r) : last])
    .filter(([a, b]) => a <= b)
    .sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
}

/** How many values the union of `ranges` covers. */
function unionSize(ranges: readonly Range[]): bigint {
  const sorted = [...ranges].sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
  let total = 0n;
  let end: bigint | undefined;
  for (const [a, b] of sorted) {
    const start = end === undefined || a > end ? a : end + 1n;
    if (b >= start) total += b - start + 1n;
    if (end === undefined || b > end) end = b;
  }
  return total;
}

/** Addresses of `cidr` covered by the union of `reservations`. */
function reservedIn(cidr: Cidr, reservations: readonly Cidr[]): bigint {
  return unionSize(clipped(cidr, reservations));
}
