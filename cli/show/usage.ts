/**
 * Utilisation for `ipamctl show` (pure), from core's one capacity arithmetic: poolUtilization
 * for a pool (BigInt: an IPv6 /64 pool holds 2^58 blocks) and blockCapacity for a block —
 * assignable addresses only (each block's reserved ordinals, network, gateway, IPv4 broadcast,
 * excluded). IPReservations are not subtracted here (show lists them apart). Each pool's
 * forecast is core's (docs/design-controller.md §Forecasts).
 */
import {
  blockCapacity,
  cidrCovers,
  forecastExhaustion,
  forecastText,
  parseCidr,
  poolBlockSize,
  poolUtilization,
} from 'blockipam/core';
import type { Forecast, IPAMBlock, IPPool } from 'blockipam/core';

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
  /**
   * When the free addresses run out at the recent allocation rate (core's forecastExhaustion
   * over the controller's samples in status.allocationSamples and the counts here).
   */
  forecast: Forecast;
  /** The forecast as a person reads it (core's forecastText), e.g. "in 3.2 days (12.5/h)". */
  exhausts: string;
}

/** A count as a forecast takes it (saturating: an IPv6 pool's free count exceeds 2^53). */
const asNumber = (n: bigint): number =>
  n > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(n);

/**
 * Utilisation of every pool, from the pools and all blocks, with its forecast at `nowMs`
 * (ms since the epoch).
 */
export function poolUsage(
  pools: readonly IPPool[],
  blocks: readonly IPAMBlock[],
  nowMs: number,
): PoolUsage[] {
  return pools.map((pool) => {
    const usage = parseCidr(pool.spec.cidr) ? poolUtilization(pool, blocks, []) : undefined;
    const capacity = usage?.capacity ?? 0n;
    const used = usage?.allocated ?? 0n;
    const forecast = forecastExhaustion(pool.status?.allocationSamples, {
      allocated: asNumber(used),
      free: asNumber(capacity - used),
      nowMs,
    });
    return {
      name: pool.metadata.name,
      cidr: pool.spec.cidr,
      blockSize: poolBlockSize(pool),
      disabled: pool.spec.disabled === true,
      capacity,
      used,
      free: capacity - used,
      blocks: usage?.blocks ?? 0,
      forecast,
      exhausts: forecastText(forecast),
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
    const capacity = cidr ? blockCapacity(cidr) : 0;
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
