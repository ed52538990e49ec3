/**
 * Blocks the allocator must not hand addresses out of although they are trusted (still routed,
 * still releasable), and the values in a block core does not take at face value. Pure.
 *
 * A block is **frozen** when any of these holds (reason, in this order):
 * - `terminating`: it has a `metadata.deletionTimestamp` (someone deleted it; it goes once its
 *   finalizers do, and every allocation in it with it);
 * - `finalizers`: it carries `metadata.finalizers` (core never sets any: a delete would hang);
 * - `owner-references`: it carries `metadata.ownerReferences` (core never sets any: Kubernetes'
 *   garbage collector deletes the block, live allocations included, once an owner is gone);
 * - `unsafe-sequence`: `spec.sequence`, or an allocation's, is above {@link SEQUENCE_REPAIRABLE_ABOVE}
 *   or not an integer (JSON numbers above 2^53 are rounded, so its compare-and-swap writes would be
 *   refused as "sequence never decreases").
 * A frozen block is never picked for a new address and does not count as room in the node's
 * blocks (the node claims another); releases in it still work, and a release of a block whose own
 * sequence is unsafe writes {@link repairedSequence} (the CRD lets a sequence above
 * {@link SEQUENCE_REPAIRABLE_ABOVE} be lowered; the admission policy lets a node do it).
 *
 * Dates: a `freed` entry's `releasedAt` or the `affinityClaimTime` later than now plus
 * {@link CLOCK_SKEW_MS} is not trusted ({@link trustedTimeMs}: read as the epoch — the entry is
 * cooled, the block's claim long past), so a date written far in the future has no effect.
 */
import type { IPAMBlock } from '../resources.ts';

/** Clock skew tolerated between nodes (ms): a later date is in the future. */
export const CLOCK_SKEW_MS = 60_000;

/** The CRD's `maximum` of every sequence: the largest integer a JSON number keeps exactly (2^53−1). */
export const SEQUENCE_MAX = Number.MAX_SAFE_INTEGER;

/**
 * Above this (2^52) a sequence is unsafe: never reached by core (sequences start at the clock in
 * ms, ~1.8·10^12, and grow by one per allocation), and the CRD lets such a value be written down.
 */
export const SEQUENCE_REPAIRABLE_ABOVE = 2 ** 52;

/** Why a trusted block is not allocated from (a bounded set: condition reason, metric label). */
export type FreezeReason = 'terminating' | 'finalizers' | 'owner-references' | 'unsafe-sequence';

export const FREEZE_REASONS: readonly FreezeReason[] = [
  'terminating',
  'finalizers',
  'owner-references',
  'unsafe-sequence',
];

/** One reason a block is frozen, with a sentence naming the evidence. */
export interface Freeze {
  readonly reason: FreezeReason;
  readonly message: string;
}

/** True when `value` is a sequence core can read and write exactly. */
export function isSafeSequence(value: unknown): boolean {
  return (
    typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= SEQUENCE_REPAIRABLE_ABOVE
  );
}

/** Every reason `block` is frozen, in the module comment's order; empty = allocatable. O(allocations). */
export function freezesOf(block: IPAMBlock): Freeze[] {
  const out: Freeze[] = [];
  const { metadata } = block;
  if (metadata.deletionTimestamp)
    out.push({
      reason: 'terminating',
      message: `deleted at ${metadata.deletionTimestamp}, still Terminating`,
    });
  if ((metadata.finalizers?.length ?? 0) > 0)
    out.push({ reason: 'finalizers', message: `carries finalizers ${metadata.finalizers!.join(', ')}` });
  if ((metadata.ownerReferences?.length ?? 0) > 0)
    out.push({
      reason: 'owner-references',
      message: `carries ownerReferences to ${metadata.ownerReferences!.map((o) => `${o.kind} ${o.name}`).join(', ')}`,
    });
  const unsafe = unsafeSequences(block);
  if (unsafe.length > 0) out.push({ reason: 'unsafe-sequence', message: unsafe.join('; ') });
  return out;
}

/** True when core may hand addresses out of `block` ({@link freezesOf} is empty). */
export function isAllocatable(block: IPAMBlock): boolean {
  return freezesOf(block).length === 0;
}

/** Sentences naming each unsafe sequence of `block` (`spec.sequence`, then allocations by key). */
export function unsafeSequences(block: IPAMBlock): string[] {
  const out: string[] = [];
  if (!isSafeSequence(block.spec.sequence))
    out.push(`spec.sequence ${String(block.spec.sequence)} is above 2^52 (JSON loses integers above 2^53)`);
  for (const [key, allocation] of Object.entries(block.spec.allocations))
    if (!isSafeSequence(allocation.sequence))
      out.push(`allocation ${key} has sequence ${String(allocation.sequence)} above 2^52`);
  return out;
}

/**
 * The sequence a repair writes: above every safe allocation sequence and at least the clock in
 * ms (the seed of a new block), so no sequence a late release may carry comes back.
 */
export function repairedSequence(block: IPAMBlock, nowMs: number): number {
  let top = Math.floor(nowMs);
  for (const allocation of Object.values(block.spec.allocations))
    if (isSafeSequence(allocation.sequence)) top = Math.max(top, allocation.sequence);
  return top + 1;
}

/**
 * `text` as ms since the epoch when core may trust it: a timestamp no later than now plus
 * {@link CLOCK_SKEW_MS}. Anything else — later, or not a timestamp — reads as 0 (the epoch).
 */
export function trustedTimeMs(text: string, nowMs: number): number {
  const at = Date.parse(text);
  return Number.isNaN(at) || at > nowMs + CLOCK_SKEW_MS ? 0 : at;
}
