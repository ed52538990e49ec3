/**
 * Records a node's host-local import ({@link planHostLocalImport}'s `imports`) in its blocks: one
 * compare-and-swap write per block holding all of that block's addresses. An ordinal already
 * holding the same handle is done (a re-run); one taken by another handle meanwhile is left as
 * it is and reported (the caller's next plan quarantines its file). Written as the node's own
 * allocations, so the node's credential may write them and its DEL releases them.
 */
import { allocateOrdinal } from '../block/block.ts';
import { updateBlock } from '../allocator/cas.ts';
import { contextOf } from '../allocator/context.ts';
import type { AllocatorOptions } from '../allocator/context.ts';
import type { Datastore } from '../datastore/datastore.ts';
import type { IPAMBlock } from '../resources.ts';
import type { HostLocalImport } from './host-local.ts';

export interface ImportOutcome {
  /** Files whose address this call recorded. */
  readonly recorded: readonly string[];
  /** Files whose address already held the same handle. */
  readonly done: readonly string[];
  /** Files whose ordinal another handle took meanwhile, or whose block is gone. */
  readonly lost: readonly string[];
}

interface Sorted {
  recorded: string[];
  done: string[];
  lost: string[];
}

/**
 * Writes `imports` into `blocks` (the node's blocks as last read; each re-read on a conflict).
 * @throws datastore errors other than Conflict / NotFound; RetriesExhaustedError
 */
export async function recordHostLocalImports(
  ds: Datastore,
  blocks: readonly IPAMBlock[],
  imports: readonly HostLocalImport[],
  options: AllocatorOptions = {},
): Promise<ImportOutcome> {
  const ctx = contextOf(ds, options);
  const recorded: string[] = [];
  const done: string[] = [];
  const lost: string[] = [];
  const byBlock = new Map<string, HostLocalImport[]>();
  for (const i of imports) byBlock.set(i.block, [...(byBlock.get(i.block) ?? []), i]);
  for (const [name, mine] of byBlock) {
    const block = blocks.find((b) => b.metadata.name === name);
    if (!block) {
      lost.push(...mine.map((i) => i.file));
      continue;
    }
    const outcome = await updateBlock<Sorted>(ctx, block, (current) => {
      let next = current;
      const sorted: Sorted = { recorded: [], done: [], lost: [] };
      for (const i of mine) {
        const held = next.spec.allocations[i.ordinal];
        if (held?.handle === i.owner.handle) sorted.done.push(i.file);
        else {
          const made = allocateOrdinal(next, i.ordinal, i.owner, ctx.clock());
          if (made) {
            next = made.block;
            sorted.recorded.push(i.file);
          } else sorted.lost.push(i.file);
        }
      }
      return sorted.recorded.length > 0 ? { write: next, result: sorted } : { skip: sorted };
    });
    if ('gone' in outcome) lost.push(...mine.map((i) => i.file));
    else {
      recorded.push(...outcome.result.recorded);
      done.push(...outcome.result.done);
      lost.push(...outcome.result.lost);
    }
  }
  return { recorded, done, lost };
}
