/**
 * Reclaiming confirmed leaks: the fresh re-check, then one exact release per address through
 * core (`releaseAddresses`: (address, handle, sequence) preconditions, compare-and-swap on the
 * block). An ordinal handed out again since the scan carries another sequence number: core
 * refuses it, nothing is freed. A handle whose re-check fails in any way is kept whole.
 */
import { releaseAddresses } from '../../../core/index.ts';
import type { AddressRelease, AllocatorOptions, Datastore } from '../../../core/index.ts';
import { FreshReads, recheckHandle } from './recheck.ts';
import type { KeepReason } from './recheck.ts';
import type { LeakCandidate } from './scan.ts';

// 8: enough parallel GETs to hide the round trip (~1–2 ms each on a local API server) without
// bursting a loaded one; the API server's priority-and-fairness bounds the rest.
export const RECHECK_CONCURRENCY = 8;

/** Outcome of one reclaim. */
export interface ReclaimResult {
  /** Addresses freed. */
  released: LeakCandidate[];
  /** Handles kept whole after the re-check, with the reason. */
  kept: { handle: string; reason: KeepReason }[];
  /** Addresses core refused (sequence or pod UID changed) or found gone (released meanwhile). */
  skipped: LeakCandidate[];
}

/** Re-checks and releases `handles` (each an all-or-nothing group). Errors of the release throw. */
export async function reclaimHandles(
  ds: Datastore,
  handles: readonly (readonly LeakCandidate[])[],
  options: AllocatorOptions = {},
): Promise<ReclaimResult> {
  const reads = new FreshReads(ds);
  const result: ReclaimResult = { released: [], kept: [], skipped: [] };
  const confirmed: LeakCandidate[] = [];
  await forEachLimited(handles, RECHECK_CONCURRENCY, async (group) => {
    const reason = await recheckHandle(group, reads);
    if (reason && group[0]) result.kept.push({ handle: group[0].allocation.handle, reason });
    else confirmed.push(...group);
  });
  if (confirmed.length === 0) return result;
  const items: AddressRelease[] = confirmed.map((c) => ({
    address: c.address,
    handle: c.allocation.handle,
    sequence: c.allocation.sequence,
    block: c.block,
  }));
  const outcome = await releaseAddresses(ds, items, {}, options);
  const freed = new Set(
    outcome.released.map((a) => `${a.block}/${a.ordinal}/${a.allocation.handle}/${a.sequence}`),
  );
  for (const candidate of confirmed)
    (freed.has(candidate.key) ? result.released : result.skipped).push(candidate);
  return result;
}

/** Runs `work` over `items` with at most `limit` in flight. */
export async function forEachLimited<T>(
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
