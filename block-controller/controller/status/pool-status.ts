/**
 * IPPool.status as the controller maintains it (pure; issue 10 item 8): usage from core's
 * poolUtilization, the effective block size (so `kubectl get ippools` shows BLOCK SIZE for a pool
 * applied without spec.blockSize), and one condition, `Allocatable` (Calico's reasons: OK,
 * CIDROverlap, PoolDisabled, Terminating).
 */
import { parseCidr, poolUtilization } from 'blockipam/core';
import type { Condition, IPAMBlock, IPPool, IPPoolStatus, IPReservation, ShadowedPool } from 'blockipam/core';

export const ALLOCATABLE = 'Allocatable';

// 2^53 − 1: status counts are JSON numbers; an IPv6 pool's capacity can exceed what a number
// (and int64) holds exactly, so counts saturate here ("9007199254740991" reads as "huge").
export const MAX_COUNT = BigInt(Number.MAX_SAFE_INTEGER);

/** The status fields the controller owns, as written. */
export interface ControllerPoolStatus extends IPPoolStatus {
  blockSize: number;
  reserved: number;
  observedGeneration?: number;
}

/** The Allocatable condition's status, reason and message (no time). */
export function allocatable(
  pool: IPPool,
  shadowed: readonly ShadowedPool[],
): Omit<Condition, 'type' | 'lastTransitionTime'> {
  const shadow = shadowed.find((s) => s.pool === pool.metadata.name);
  if (pool.metadata.deletionTimestamp)
    return {
      status: 'False',
      reason: 'Terminating',
      message: 'the pool is being deleted: no new allocations',
    };
  if (shadow)
    return {
      status: 'False',
      reason: 'CIDROverlap',
      message: `${pool.spec.cidr} overlaps the older IP pool "${shadow.by}": no allocations from this pool`,
    };
  if (pool.spec.disabled)
    return { status: 'False', reason: 'PoolDisabled', message: 'spec.disabled is true' };
  return { status: 'True', reason: 'OK', message: 'addresses are allocated from this pool' };
}

/**
 * The status `pool` should have. `lastTransitionTime` is kept from the stored condition when its
 * status did not change, else `nowIso`.
 */
export function desiredStatus(
  pool: IPPool,
  input: {
    blocks: readonly IPAMBlock[];
    reservations: readonly IPReservation[];
    shadowed: readonly ShadowedPool[];
  },
  nowIso: string,
): ControllerPoolStatus {
  const cidrs = input.reservations.flatMap((r) =>
    r.spec.reservedCIDRs.map((text) => parseCidr(text, { strict: false })).filter((c) => c !== undefined),
  );
  const usage = poolUtilization(pool, input.blocks, cidrs);
  const count = (n: bigint): number => Number(n > MAX_COUNT ? MAX_COUNT : n);
  const condition = allocatable(pool, input.shadowed);
  const previous = pool.status?.conditions?.find((c) => c.type === ALLOCATABLE);
  const since = previous && previous.status === condition.status && previous.lastTransitionTime;
  const others = (pool.status?.conditions ?? []).filter((c) => c.type !== ALLOCATABLE);
  return {
    ...(pool.metadata.generation === undefined ? {} : { observedGeneration: pool.metadata.generation }),
    blockSize: usage.blockSize,
    capacity: count(usage.capacity),
    allocated: count(usage.allocated),
    free: count(usage.free),
    reserved: count(usage.reserved),
    blocks: usage.blocks,
    conditions: [...others, { type: ALLOCATABLE, ...condition, lastTransitionTime: since || nowIso }],
  };
}

/** True when writing `next` would change the stored status (compared field by field). */
export function statusDiffers(stored: IPPoolStatus | undefined, next: ControllerPoolStatus): boolean {
  return JSON.stringify(canonical(stored ?? {})) !== JSON.stringify(canonical(next));
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
    );
  return value;
}
