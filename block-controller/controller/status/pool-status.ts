/**
 * IPPool.status as the controller maintains it (pure): figures from core's poolUtilization, the
 * effective block size (so `kubectl get ippools` shows BLOCK SIZE for a pool applied without
 * spec.blockSize), the conditions and state from core's poolConditions (kept by core's
 * setConditions: lastTransitionTime moves only with a status), and the nodes short of addresses
 * from core's nodeHeadroom (docs/design-controller.md §Pool conditions), and the allocated count's
 * samples forecasts are made from (core's nextSamples: a new one at most every 30 min;
 * docs/design-controller.md §Forecasts).
 */
import { nextSamples, parseCidr, poolConditions, poolUtilization, setConditions } from 'blockipam/core';
import type {
  IPAMBlock,
  IPAMSettings,
  IPPool,
  IPPoolStatus,
  IPReservation,
  NodeHeadroom,
  PoolUtilization,
} from 'blockipam/core';

export const ALLOCATABLE = 'Allocatable';

// 2^53 − 1: status counts are JSON numbers; an IPv6 pool's capacity can exceed what a number
// (and int64) holds exactly, so counts saturate here ("9007199254740991" reads as "huge").
const MAX_COUNT = BigInt(Number.MAX_SAFE_INTEGER);

// 10: every agent watches IPPools, so the status stays small; shortNodeCount gives the total.
const MAX_SHORT_NODES = 10;

/** The status fields the controller owns, as written. */
export interface ControllerPoolStatus extends IPPoolStatus {
  blockSize: number;
  reserved: number;
  state: string;
  observedGeneration?: number;
}

/** Each pool with its utilisation, from the blocks and the reservations (parsed once). */
export function poolFigures(
  pools: readonly IPPool[],
  blocks: readonly IPAMBlock[],
  reservations: readonly IPReservation[],
): { pool: IPPool; usage: PoolUtilization }[] {
  const cidrs = reservations.flatMap((r) =>
    r.spec.reservedCIDRs.map((text) => parseCidr(text, { strict: false })).filter((c) => c !== undefined),
  );
  return pools.map((pool) => ({ pool, usage: poolUtilization(pool, blocks, cidrs) }));
}

/** A bigint as a status count (saturating at MAX_COUNT). */
export function count(n: bigint): number {
  return Number(n > MAX_COUNT ? MAX_COUNT : n);
}

/**
 * The status `pool` should have. `lastTransitionTime` is kept from each stored condition whose
 * status did not change, else `nowIso`.
 * @param input.headroom core's nodeHeadroom entries (any pool: this pool's are picked)
 */
export function desiredStatus(
  pool: IPPool,
  input: {
    usage: PoolUtilization;
    shadowedBy?: string;
    settings: Pick<IPAMSettings, 'poolNearlyExhaustedPercent'>;
    headroom: readonly NodeHeadroom[];
  },
  nowIso: string,
): ControllerPoolStatus {
  const { usage } = input;
  const verdict = poolConditions({
    pool,
    usage,
    ...(input.shadowedBy === undefined ? {} : { shadowedBy: input.shadowedBy }),
    nearlyExhaustedPercent: input.settings.poolNearlyExhaustedPercent,
  });
  const short = input.headroom
    .filter((h) => h.pool === pool.metadata.name && h.short !== undefined)
    .sort((a, b) => a.free - b.free || a.node.localeCompare(b.node));
  const generation = pool.metadata.generation;
  return {
    ...(generation === undefined ? {} : { observedGeneration: generation }),
    blockSize: usage.blockSize,
    capacity: count(usage.capacity),
    allocated: count(usage.allocated),
    free: count(usage.free),
    reserved: count(usage.reserved),
    blocks: usage.blocks,
    state: verdict.state,
    unclaimedBlocks: count(usage.unclaimedBlocks),
    freeInClaimedBlocks: count(usage.freeInClaimedBlocks),
    freeInUnclaimedBlocks: count(usage.freeInUnclaimedBlocks),
    borrowed: count(usage.borrowed),
    shortNodes: short
      .slice(0, MAX_SHORT_NODES)
      .map((h) => ({ node: h.node, free: h.free, blocks: h.blocks, reason: h.short ?? '' })),
    shortNodeCount: short.length,
    allocationSamples: nextSamples(
      pool.status?.allocationSamples,
      count(usage.allocated),
      Date.parse(nowIso),
    ),
    conditions: setConditions(pool.status?.conditions, verdict.conditions, nowIso, generation),
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
