/**
 * The leaked-addresses step of a pass: scan the watched blocks, update the
 * candidates' first-seen times, re-check and release the handles whose every allocation is past
 * its grace period. Returns the scan (the node step needs it) and what was released.
 */
import { settingsOf } from 'blockipam/core';
import type { PassContext } from '../pass.ts';
import { ownerIndex } from './owners.ts';
import { reclaimHandles } from './reclaim.ts';
import type { ReclaimResult } from './reclaim.ts';
import { dueHandles, scanAllocations } from './scan.ts';
import type { LeakCandidate, LeakCandidates, Scan } from './scan.ts';

export interface LeakStep {
  scan: Scan;
  reclaim: ReclaimResult;
}

/**
 * @param quarantined whether a deleted node's allocations are still held (gc/gone-nodes.ts):
 *   its `node-gone` candidates wait until it returns false
 */
export async function leakStep(
  ctx: PassContext,
  candidates: LeakCandidates,
  quarantined: (node: string) => boolean,
): Promise<LeakStep> {
  const owners = ownerIndex(ctx.view.pods(), ctx.view.nodeNames());
  const scan = scanAllocations(ctx.view.blocks(), owners);
  const nowMs = ctx.clock();
  for (const c of candidates.observe(scan.candidates, nowMs))
    ctx.metrics?.leaksFound.inc({ ippool: c.pool, reason: c.reason });
  const graceMs = settingsOf(ctx.view.config()).leakGracePeriodSeconds * 1000;
  const due = dueHandles(scan, candidates, nowMs, { graceMs, quarantined });
  const empty: ReclaimResult = { released: [], kept: [], skipped: [], failed: [] };
  if (due.length === 0 || !ctx.mayWrite()) return { scan, reclaim: empty };
  const reclaim = await reclaimHandles(ctx.ds, due, ctx.allocator);
  for (const c of [...reclaim.released, ...reclaim.skipped]) candidates.forget(c.key);
  // A failed release leaves its candidates as they are (grace already over): retried next pass.
  for (const { candidate, error } of reclaim.failed) {
    ctx.onApiError?.('release-leaks', error);
    ctx.log.warn('releasing a leaked address failed; retried next pass', {
      address: candidate.address,
      handle: candidate.allocation.handle,
      error: String(error),
    });
  }
  for (const c of reclaim.released)
    ctx.metrics?.gcReclamations.inc({ ippool: c.pool, node: c.allocation.node });
  for (const kept of reclaim.kept)
    ctx.log.info('leak candidate kept after the fresh re-check', {
      handle: kept.handle,
      reason: kept.reason,
    });
  report(ctx, reclaim.released);
  return { scan, reclaim };
}

/** One log line per released address, one Event per block touched. */
function report(ctx: PassContext, released: readonly LeakCandidate[]): void {
  const byBlock = new Map<string, LeakCandidate[]>();
  for (const c of released) {
    byBlock.set(c.block, [...(byBlock.get(c.block) ?? []), c]);
    ctx.log.info('leaked address released', {
      address: c.address,
      block: c.block,
      handle: c.allocation.handle,
      node: c.allocation.node,
      namespace: c.allocation.namespace,
      pod: c.allocation.pod,
      reason: c.reason,
    });
  }
  for (const [block, list] of byBlock) {
    const shown = list
      .slice(0, 10)
      .map((c) => `${c.address} (${c.reason}, ${c.allocation.namespace ?? '-'}/${c.allocation.pod ?? '-'})`);
    ctx.events.emit({
      kind: 'IPAMBlock',
      name: block,
      type: 'Normal',
      reason: 'LeaksReleased',
      action: 'Release',
      note: `released ${list.length} leaked address(es): ${shown.join(', ')}${list.length > 10 ? ', …' : ''}`,
    });
  }
}
