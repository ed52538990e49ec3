/**
 * Utilisation arithmetic for `ipamctl show` (pure). Capacity counts assignable addresses only
 * (each block's reserved ordinals — network, gateway, IPv4 broadcast — excluded), as BigInt:
 * an IPv6 /64 pool holds 2^58 blocks.
 */
import {
  blockOrdinals,
  cidrCovers,
  cidrSize,
  parseCidr,
  poolBlockSize,
  reservedOrdinals,
} from 'blockipam/core';
import type { IPAMBlock, IPPool } from 'blockipam/core';

/** One pool's utilisation. */
export interface PoolUsage {
  name: string;
  cidr: string;
  blockSize: number;
  disabled: boolean;
  /** Assignable addresses if the whole pool were carved into blocks. */
  capacity: bigint;
  /** Allocated addresses (in blocks inside the pool). */
  used: bigint;
  free: bigint;
  /** Blocks claimed inside the pool. */
  blocks: number;
}

/** Assignable ordinals of a block of prefix `blockSize` in a pool of this family. */
function perBlock(pool: IPPool): bigint {
  const cidr = parseCidr(pool.spec.cidr);
  if (!cidr) return 0n;
  const block = { family: cidr.family, base: cidr.base, prefixLength: poolBlockSize(pool) };
  return BigInt(blockOrdinals(block) - reservedOrdinals(block).length);
}

/** Utilisation of every pool, from the pools and all blocks. */
export function poolUsage(pools: readonly IPPool[], blocks: readonly IPAMBlock[]): PoolUsage[] {
  return pools.map((pool) => {
    const cidr = parseCidr(pool.spec.cidr);
    const blockSize = poolBlockSize(pool);
    const mine = blocks.filter((b) => {
      const bc = parseCidr(b.spec.cidr);
      return cidr !== undefined && bc !== undefined && cidrCovers(cidr, bc);
    });
    const blockCount = cidr
      ? cidrSize(cidr) / (1n << BigInt((cidr.family === 4 ? 32 : 128) - blockSize))
      : 0n;
    const capacity = blockCount * perBlock(pool);
    const used = BigInt(mine.reduce((n, b) => n + Object.keys(b.spec.allocations).length, 0));
    return {
      name: pool.metadata.name,
      cidr: pool.spec.cidr,
      blockSize,
      disabled: pool.spec.disabled === true,
      capacity,
      used,
      free: capacity - used,
      blocks: mine.length,
    };
  });
}

/** One block's utilisation. */
export interface BlockUsage {
  name: string;
  cidr: string;
  pool: string;
  affinity: string | null;
  capacity: number;
  used: number;
  free: number;
}

/** Utilisation of each block; `pool` is the pool whose CIDR covers it ('' when none does). */
export function blockUsage(pools: readonly IPPool[], blocks: readonly IPAMBlock[]): BlockUsage[] {
  return blocks.map((b) => {
    const cidr = parseCidr(b.spec.cidr);
    const pool = pools.find((p) => {
      const pc = parseCidr(p.spec.cidr);
      return pc !== undefined && cidr !== undefined && cidrCovers(pc, cidr);
    });
    const capacity = cidr ? blockOrdinals(cidr) - reservedOrdinals(cidr).length : 0;
    const used = Object.keys(b.spec.allocations).length;
    return {
      name: b.metadata.name,
      cidr: b.spec.cidr,
      pool: pool?.metadata.name ?? '',
      affinity: b.spec.affinity,
      capacity,
      used,
      free: capacity - used,
    };
  });
}
