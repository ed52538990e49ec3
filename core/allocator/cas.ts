/**
 * Read-modify-write of one IPAMBlock under compare-and-swap (docs/design-core.md §2): apply a pure change to
 * the block as read, UPDATE with its resourceVersion; on 409 re-read, recompute, retry with
 * jittered backoff, bounded. The cached object is never trusted after a lost race.
 */
import { isConflict } from '../errors/conflict.ts';
import { isNotFound } from '../errors/not-found.ts';
import { RetriesExhaustedError } from '../errors/retries-exhausted.ts';
import type { IPAMBlock } from '../resources.ts';
import { backoff } from './context.ts';
import type { Context } from './context.ts';

/** What a change decides for the block it is given. */
export type Change<R> =
  /** Write `block`; on success the operation's result is `result`. */
  | { write: IPAMBlock; result: R }
  /** Nothing to write (e.g. the block is full): finish with `result`. */
  | { skip: R };

/** Outcome of {@link updateBlock}: the result, plus the stored block when a write happened. */
export type CasOutcome<R> = { result: R; written?: IPAMBlock } | { gone: true };

/**
 * Applies `change` to `block` (as last read) and writes it, retrying on conflict with a fresh read.
 * @returns `{gone: true}` when the block was deleted meanwhile
 * @throws RetriesExhaustedError after `ctx.maxRetries` lost races; datastore errors other than
 *   Conflict / NotFound propagate
 */
export async function updateBlock<R>(
  ctx: Context,
  block: IPAMBlock,
  change: (current: IPAMBlock) => Change<R>,
): Promise<CasOutcome<R>> {
  let current = block;
  for (let attempt = 1; ; attempt++) {
    const decided = change(current);
    if ('skip' in decided) return { result: decided.skip };
    try {
      const written = await ctx.ds.blocks.update(decided.write);
      return { result: decided.result, written };
    } catch (error) {
      if (isNotFound(error)) return { gone: true };
      if (!isConflict(error)) throw error;
      ctx.stats.conflicts += 1;
      if (attempt >= ctx.maxRetries)
        throw new RetriesExhaustedError(
          `IPAMBlock ${block.metadata.name}: gave up after ${attempt} conflicting writes`,
          attempt,
        );
    }
    ctx.stats.retries += 1;
    await backoff(ctx, attempt);
    const fresh = await ctx.ds.blocks.get(block.metadata.name);
    if (!fresh) return { gone: true };
    current = fresh;
  }
}
