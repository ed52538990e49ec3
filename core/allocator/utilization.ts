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
}

/**
 * Utilisation of `pool` from the blocks (any, filtered by CIDR) and the reservations' CIDRs.
 * Cost: O(blocks + reservations log reservations).
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
  const capacity = (cidrSize(cidr) >> BigInt(bitsOf(cidr.family) - blockSize)) * perBlock;
  let allocated = 0n;
  let count = 0;
  for (const b of blocks) {
    const bc = parseCidr(b.spec.cidr);
    if (!bc || !cidrCovers(cidr, bc)) continue;
    count += 1;
    allocated += BigInt(Object.keys(b.spec.allocations).length);
  }
  const reserved = reservedIn(cidr, reservations);
  const free = capacity - allocated - reserved;
  return { blockSize, capacity, allocated, reserved, free: free > 0n ? free : 0n, blocks: count };
}

/** Addresses of `cidr` covered by the union of `reservations`. */
function reservedIn(cidr: Cidr, reservations: readonly Cidr[]): bigint {
  const first = cidr.base;
  const last = cidrLast(cidr);
  const ranges = reservations
    .filter((r) => r.family === cidr.family)
    .map((r) => [r.base > first ? r.base : first, cidrLast(r) < last ? cidrLast(r) : last] as const)
    .filter(([a, b]) => a <= b)
    .sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
  let total = 0n;
  let end = first - 1n;
  for (const [a, b] of ranges) {
    const start = a > end ? a : end + 1n;
    if (b >= start) total += b - start + 1n;
    if (b > end) end = b;
  }
  return total;
}
