/**
 * What `ipamctl repair sequence` writes (docs/design-cli.md §repair sequence): a block whose
 * `spec.sequence`, or an allocation's, is unsafe (core's `unsafeSequences`: above 2^52, or not an
 * integer) gets sequences core can read and write exactly again. Pure.
 *
 * The first fresh value is core's `repairedSequence` — above every safe allocation sequence and at
 * least the clock in ms, so no sequence a late release may carry comes back — raised above the
 * block's own sequence when that is safe (the CRD refuses a safe sequence that decreases). Each
 * unsafe allocation, by ordinal, gets the next fresh value; `spec.sequence` becomes the last value
 * given (the first when no allocation needed one), so sequences stay unique and none is above the
 * block's (core's invariant I5). JSON numbers above 2^53 arrive rounded (2^53 + 1 reads as 2^53):
 * the write replaces them whatever they were.
 */
import { isSafeSequence, repairedSequence, unsafeSequences } from 'blockipam/core';
import type { IPAMBlock } from 'blockipam/core';

/** One sequence rewritten: `spec.sequence` (no ordinal) or an allocation's. */
interface SequenceChange {
  /** The allocation's ordinal; undefined for `spec.sequence`. */
  ordinal?: number;
  /** The allocation's handle; undefined for `spec.sequence`. */
  handle?: string;
  from: number;
  to: number;
}

/** A planned repair of one block. */
export interface SequenceRepair {
  /** Core's sentences naming each unsafe sequence (what the repair is for). */
  unsafe: string[];
  /** `spec.sequence` first, then the allocations by ordinal. */
  changes: SequenceChange[];
  /** The block to write: `block` with the new sequences, its metadata (resourceVersion) unchanged. */
  repaired: IPAMBlock;
}

/**
 * Plans the repair of `block` at `nowMs`; undefined when every sequence of it is safe (nothing
 * to repair). O(allocations).
 */
export function planSequenceRepair(block: IPAMBlock, nowMs: number): SequenceRepair | undefined {
  const unsafe = unsafeSequences(block);
  if (unsafe.length === 0) return undefined;
  const own = block.spec.sequence;
  let next = Math.max(repairedSequence(block, nowMs), isSafeSequence(own) ? own + 1 : 0);
  const allocations = { ...block.spec.allocations };
  const rewritten: SequenceChange[] = [];
  const ordinals = Object.keys(allocations)
    .map(Number)
    .sort((a, b) => a - b);
  for (const ordinal of ordinals) {
    const allocation = allocations[ordinal];
    if (!allocation || isSafeSequence(allocation.sequence)) continue;
    rewritten.push({ ordinal, handle: allocation.handle, from: allocation.sequence, to: next });
    allocations[ordinal] = { ...allocation, sequence: next };
    next += 1;
  }
  const sequence = rewritten.length > 0 ? next - 1 : next;
  return {
    unsafe,
    changes: [{ from: own, to: sequence }, ...rewritten],
    repaired: { ...block, spec: { ...block.spec, sequence, allocations } },
  };
}
