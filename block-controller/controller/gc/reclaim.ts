/**
 * Reclaiming confirmed leaks: the fresh re-check, then one exact release per address through
 * core (`releaseAddresses`: (address, handle, sequence) preconditions, compare-and-swap on the
 * block). An ordinal handed out again since the scan carries another sequence number: core
 * refuses it, nothing is freed. A handle whose re-check fails in any way is kept whole.
 */
import { releaseAddresses } from 'blockipam/core';
import type { AddressRelease, AllocatorOptions, Datastore } from 'blockipam/core';
import { FreshReads, recheckHandle } from './recheck.ts';
import type { KeepReason } from './recheck.ts';
import type { LeakCandidate } from './scan.ts';

// 8: enough parallel GETs to hide the round trip (~1–2 ms each on a local API server) without
// bursting a loaded one; the API server's priority-and-fairness bounds the rest.
const RECHECK_CONCURRENCY = 8;

/** Outcome of one reclaim. */
export interface ReclaimResult {
  /** Addresses freed. */
  released: LeakCandidate[];
  /** Handles kept whole after the re-check, with the reason. */
  kept: { handle: string; reason: KeepReason }[];
  /** Addresses core refused (sequence or pod UID changed) or found gone (released meanwhile). */
  skipped: LeakCandidate[];
  /** Addresses whose release failed (API error): still candidates, retried next pass. */
  failed: { candidate: LeakCandidate; error: unknown }[];
}

/** Re-checks and releases `handles` (each an all-or-nothing group). Never throws: failures are in `failed`. */
export async function reclaimHandles(
  ds: Datastore,
  handles: readonly (readonly LeakCandidate[])[],
  options: AllocatorOptions = {},
): Promise<ReclaimResult> {
  const reads = new FreshReads(ds);
  const result: ReclaimResult = { released: [], kept: [], skipped: [], failed: [] };
  const confirmed: LeakCandidate[] = [];
  await forEachLimited(handles, RECHECK_CONCURRENCY, async (group) => {
    const reason = await recheckHandle(group, reads);
    if (reason && group[0]) result.kept.push({ handle: group[0].allocation.handle, reason });
    else confirmed.push(...group);
  });
  // One release per block, RECHECK_CONCURRENCY blocks at a time: distinct blocks never conflict,
  // and core groups a call's items into one compare-and-swap per block.
  const byBlock = new Map<string, LeakCandidate[]>();
  for (const c of confirmed) byBlock.set(c.block, [...(byBlock.get(c.block) ?? []), c]);
  await forEachLimited([...byBlock.values()], RECHECK_CONCURRENCY, async (group) => {
    const items: AddressRelease[] = group.map((c) => ({
      address: c.address,
      handle: c.allocation.handle,
      sequence: c.allocation.sequence,
      block: c.block,
    }));
    let outcome: Awaited<ReturnType<typeof releaseAddresses>>;
    try {
      outcome = await releaseAddresses(ds, items, {}, options);
    } catch (error) {
      result.failed.push(...group.map((candidate) => ({ candidate, error })));
      return;
    }
    const freed = new Set(
      outcome.released.map((a) => `${a.block}/${a.ordinal}/${a.allocation.handle}/${a.sequence}`),
    );
    const notHeld = new Set([
      ...outcome.gone.map((i) => i.address),
      ...outcome.refused.map((a) => a.address),
    ]);
    for (const candidate of group) {
      if (freed.has(candidate.key)) result.released.push(candidate);
      else if (notHeld.has(candidate.address)) result.skipped.push(candidate);
      else result.failed.push({ candidate, error: new Error('not released (no outcome reported for it)') });
    }
  });
  return result;
}

/** Runs `work` over `items` with at most `limit` in flight. */
async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T;
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
