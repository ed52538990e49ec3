/**
 * The IPPool status step: each pool's desired status from the watched blocks and reservations,
 * written through the status subresource only when it differs (compare-and-swap on the
 * resourceVersion watched: a 409 means the pool changed, and the next pass sees the change).
 * An Event when the Allocatable condition changes (e.g. a pool applied over an older one).
 */
import { isConflict, isNotFound, rfc3339, usablePools } from 'blockipam/core';
import type { PassContext } from '../pass.ts';
import { ALLOCATABLE, desiredStatus, statusDiffers } from './pool-status.ts';

export interface StatusStep {
  written: string[];
}

export async function poolStatusStep(ctx: PassContext): Promise<StatusStep> {
  const result: StatusStep = { written: [] };
  const pools = ctx.view.pools();
  const { shadowed } = usablePools(pools);
  const input = { blocks: ctx.view.blocks(), reservations: ctx.view.reservations(), shadowed };
  const nowIso = rfc3339(ctx.clock());
  for (const pool of pools) {
    const status = desiredStatus(pool, input, nowIso);
    ctx.metrics?.poolSize.set({ ippool: pool.metadata.name }, status.capacity ?? 0);
    ctx.metrics?.poolReserved.set({ ippool: pool.metadata.name }, status.reserved);
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
    const before = pool.status?.conditions?.find((c) => c.type === ALLOCATABLE);
    const after = status.conditions?.find((c) => c.type === ALLOCATABLE);
    if (after && (before?.status !== after.status || before?.reason !== after.reason)) {
      ctx.log.info('IPPool condition changed', { pool: pool.metadata.name, reason: after.reason });
      ctx.events.emit({
        kind: 'IPPool',
        name: pool.metadata.name,
        ...(pool.metadata.uid ? { uid: pool.metadata.uid } : {}),
        type: after.status === 'True' ? 'Normal' : 'Warning',
        reason: after.reason ?? ALLOCATABLE,
        action: 'UpdateStatus',
        note: `Allocatable=${after.status}: ${after.message ?? ''}`,
      });
    }
  }
  return result;
}
