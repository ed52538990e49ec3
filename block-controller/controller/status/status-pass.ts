/**
 * The IPPool status step: each pool's desired status from the watched blocks, reservations,
 * Nodes and IPAMConfig, written through the status subresource only when it differs
 * (compare-and-swap on the resourceVersion watched: a 409 means the pool changed, and the next
 * pass sees the change). The pool and node-headroom gauges from the same figures. Events: when
 * the Allocatable condition changes (e.g. a pool applied over an older one; at most one per pool
 * and Allocatable state per PoolEventLimiter interval), when the pool becomes NearlyExhausted
 * or Exhausted, and when it leaves either (once per transition, at most one per pool, condition
 * and direction per interval). Node headroom counts Manual pools where pending pods request them
 * (core's requestedManualPools: the pod's or its namespace's annotation).
 */
import {
  becameTrue,
  conditionOf,
  isConflict,
  isNotFound,
  nodeHeadroom,
  POOL_CONDITIONS,
  requestedManualPools,
  rfc3339,
  settingsOf,
  usablePools,
} from 'blockipam/core';
import type { IPPool, NodeHeadroom, PoolUtilization } from 'blockipam/core';
import type { ControllerMetrics } from '../metrics.ts';
import type { PassContext } from '../pass.ts';
import { ALLOCATABLE, count, desiredStatus, poolFigures, statusDiffers } from './pool-status.ts';
import type { ControllerPoolStatus } from './pool-status.ts';

export interface StatusStep {
  written: string[];
}

// 10 min: a pool hovering at the threshold flips NearlyExhausted with each pod started or
// deleted; one Event per pool and condition in 10 min says it without flooding `kubectl describe`.
const POOL_EVENT_INTERVAL_MS = 600_000;

/** The Warning Event of each condition that is news when it becomes True. */
const ALERTS: Readonly<Record<string, string>> = {
  NearlyExhausted: 'PoolNearlyExhausted',
  Exhausted: 'PoolExhausted',
};
/** The Normal Event of each of those conditions when it stops being True (the pool recovered). */
const RECOVERIES: Readonly<Record<string, string>> = {
  NearlyExhausted: 'PoolNoLongerNearlyExhausted',
  Exhausted: 'PoolNoLongerExhausted',
};

/**
 * At most one Event per (pool, key) per `intervalMs` (in memory: a new leader starts afresh). The
 * keys of a pool are forgotten when the pool is gone ({@link PoolEventLimiter.retain}), so the
 * memory is bounded by the pools that exist times the keys of each (a handful: the alerting
 * conditions and the Allocatable states).
 */
export class PoolEventLimiter {
  /** pool name → key → when its last Event went out (ms since the epoch). */
  readonly #last = new Map<string, Map<string, number>>();
  readonly #intervalMs: number;
  constructor(intervalMs = POOL_EVENT_INTERVAL_MS) {
    this.#intervalMs = intervalMs;
  }
  /** True (and remembered) when an Event about `pool` for `key` may go out at `nowMs`. */
  allow(pool: string, key: string, nowMs: number): boolean {
    let keys = this.#last.get(pool);
    const last = keys?.get(key);
    if (last !== undefined && nowMs - last < this.#intervalMs) return false;
    if (!keys) this.#last.set(pool, (keys = new Map<string, number>()));
    keys.set(key, nowMs);
    return true;
  }
  /** Forgets every pool not in `pools` (deleted pools: a pool re-created later starts afresh). */
  retain(pools: ReadonlySet<string>): void {
    for (const pool of this.#last.keys()) if (!pools.has(pool)) this.#last.delete(pool);
  }
  /** The pools remembered (bounded by the pools that exist; for tests and debugging). */
  get pools(): number {
    return this.#last.size;
  }
}

export async function poolStatusStep(
  ctx: PassContext,
  limiter: PoolEventLimiter = new PoolEventLimiter(),
): Promise<StatusStep> {
  const result: StatusStep = { written: [] };
  const pools = ctx.view.pools();
  limiter.retain(new Set(pools.map((p) => p.metadata.name)));
  const blocks = ctx.view.blocks();
  const { usable, shadowed } = usablePools(pools);
  const settings = settingsOf(ctx.view.config());
  const figures = poolFigures(pools, blocks, ctx.view.reservations());
  const headroom = nodeHeadroom({
    pools: usable,
    requested: requestedManualPools(ctx.view.pods(), (ns) => ctx.view.namespaceAnnotations(ns), usable),
    nodes: ctx.view.nodes(),
    blocks,
    settings,
    unclaimedBlocks: new Map(figures.map(({ pool, usage }) => [pool.metadata.name, usage.unclaimedBlocks])),
  });
  const nowIso = rfc3339(ctx.clock());
  const wanted = figures.map(({ pool, usage }) => {
    const shadowedBy = shadowed.find((s) => s.pool === pool.metadata.name)?.by;
    const status = desiredStatus(
      pool,
      { usage, ...(shadowedBy === undefined ? {} : { shadowedBy }), settings, headroom },
      nowIso,
    );
    return { pool, usage, status };
  });
  if (ctx.metrics) setGauges(ctx.metrics, wanted, headroom);
  for (const { pool, status } of wanted) {
    if (!statusDiffers(pool.status, status) || !ctx.mayWrite()) continue;
    try {
      await ctx.ds.pools.updateStatus({ ...pool, status });
      result.written.push(pool.metadata.name);
    } catch (error) {
      if (isConflict(error) || isNotFound(error)) continue;
      ctx.onApiError?.('pool-status', error);
      ctx.log.warn('IPPool status not written; retried next pass', {
        pool: pool.metadata.name,
        error: String(error),
      });
      continue;
    }
    transitionEvents(ctx, limiter, pool, status);
  }
  return result;
}

/**
 * The Events of a written status: Allocatable changed; NearlyExhausted / Exhausted became True
 * (Warning), or stopped being True (Normal).
 */
function transitionEvents(
  ctx: PassContext,
  limiter: PoolEventLimiter,
  pool: IPPool,
  status: ControllerPoolStatus,
): void {
  const regarding = {
    kind: 'IPPool' as const,
    name: pool.metadata.name,
    ...(pool.metadata.uid ? { uid: pool.metadata.uid } : {}),
  };
  const before = conditionOf(pool.status?.conditions, ALLOCATABLE);
  const after = conditionOf(status.conditions, ALLOCATABLE);
  if (after && (before?.status !== after.status || before?.reason !== after.reason)) {
    ctx.log.info('IPPool condition changed', { pool: pool.metadata.name, reason: after.reason });
    // keyed by the state reached: a pool flapping (disabled and enabled, applied over an older one
    // and back) says each state once per interval, never one Event per flip
    if (
      limiter.allow(pool.metadata.name, `${ALLOCATABLE}=${after.status}/${after.reason ?? ''}`, ctx.clock())
    )
      ctx.events.emit({
        ...regarding,
        type: after.status === 'True' ? 'Normal' : 'Warning',
        reason: after.reason ?? ALLOCATABLE,
        action: 'UpdateStatus',
        note: `Allocatable=${after.status}: ${after.message ?? ''}`,
      });
  }
  for (const type of becameTrue(pool.status?.conditions, status.conditions)) {
    const reason = ALERTS[type];
    if (!reason) continue;
    const condition = conditionOf(status.conditions, type);
    ctx.log.warn(`IPPool ${type}`, { pool: pool.metadata.name, reason: condition?.reason });
    if (!limiter.allow(pool.metadata.name, type, ctx.clock())) continue;
    ctx.events.emit({
      ...regarding,
      type: 'Warning',
      reason,
      action: 'UpdateStatus',
      note: `${type} (${condition?.reason ?? ''}): ${condition?.message ?? ''}`,
    });
  }
  for (const [type, reason] of Object.entries(RECOVERIES)) {
    if (conditionOf(pool.status?.conditions, type)?.status !== 'True') continue;
    const condition = conditionOf(status.conditions, type);
    if (condition?.status === 'True') continue;
    ctx.log.info(`IPPool no longer ${type}`, { pool: pool.metadata.name, reason: condition?.reason });
    if (!limiter.allow(pool.metadata.name, `${type}=False`, ctx.clock())) continue;
    ctx.events.emit({
      ...regarding,
      type: 'Normal',
      reason,
      action: 'UpdateStatus',
      note: `no longer ${type}${condition?.message ? `: ${condition.message}` : ''}`,
    });
  }
}

/** The pool and node gauges, reset and set in one go (no scrape sees a half-set family). */
function setGauges(
  m: ControllerMetrics,
  wanted: readonly { pool: IPPool; usage: PoolUtilization; status: ControllerPoolStatus }[],
  headroom: readonly NodeHeadroom[],
): void {
  const pools = [
    m.poolSize,
    m.poolReserved,
    m.poolAllocated,
    m.poolFree,
    m.poolFreeInClaimedBlocks,
    m.poolBlocksClaimed,
    m.poolBlocksUnclaimed,
  ];
  for (const gauge of [...pools, m.poolCondition, m.nodeHeadroom, m.nodeShort]) gauge.reset();
  for (const { pool, usage, status } of wanted) {
    const ippool = pool.metadata.name;
    m.poolSize.set({ ippool }, count(usage.capacity));
    m.poolReserved.set({ ippool }, count(usage.reserved));
    m.poolAllocated.set({ ippool }, count(usage.allocated));
    m.poolFree.set({ ippool }, count(usage.free));
    m.poolFreeInClaimedBlocks.set({ ippool }, count(usage.freeInClaimedBlocks));
    m.poolBlocksClaimed.set({ ippool }, usage.blocks);
    m.poolBlocksUnclaimed.set({ ippool }, count(usage.unclaimedBlocks));
    for (const condition of POOL_CONDITIONS)
      m.poolCondition.set(
        { ippool, condition },
        conditionOf(status.conditions, condition)?.status === 'True' ? 1 : 0,
      );
  }
  for (const h of headroom) {
    m.nodeHeadroom.set({ ippool: h.pool, node: h.node }, h.free);
    if (h.short) m.nodeShort.set({ ippool: h.pool, node: h.node, reason: h.short }, 1);
  }
}
