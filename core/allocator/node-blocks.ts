/**
 * Releasing a node's affinity (Calico's ReleaseHostAffinities), for the controller when a node is
 * deleted: each empty block of the node is deleted (resourceVersion + uid preconditions); a block
 * that still holds allocations becomes unowned (affinity null: borrowable, and deleted by the
 * release path once its last allocation goes).
 */
import { isEmpty, setAffinity } from '../block/block.ts';
import { affineSelector } from '../block/labels.ts';
import type { Datastore } from '../datastore/datastore.ts';
import { isConflict } from '../errors/conflict.ts';
import { isNotFound } from '../errors/not-found.ts';
import { RetriesExhaustedError } from '../errors/retries-exhausted.ts';
import type { IPAMBlock } from '../resources.ts';
import { backoff, contextOf } from './context.ts';
import type { AllocatorOptions, Context } from './context.ts';
import { deleteIfUnchanged } from './release.ts';

/** What happened to the node's blocks. */
export interface NodeBlocksRelease {
  deleted: string[];
  unowned: string[];
}

/**
 * Releases every block affine to `node`. Cost: 1 LIST + 1 write per block (more on conflicts).
 * @throws RetriesExhaustedError when a block keeps changing under us
 */
export async function releaseNodeBlocks(
  ds: Datastore,
  node: string,
  options: AllocatorOptions = {},
): Promise<NodeBlocksRelease> {
  const ctx = contextOf(ds, options);
  const result: NodeBlocksRelease = { deleted: [], unowned: [] };
  for (const block of await ctx.ds.blocks.list({ labelSelector: affineSelector(node) })) {
    const outcome = await releaseOne(ctx, block, node);
    if (outcome !== 'gone') result[outcome].push(block.metadata.name);
  }
  return result;
}

/**
 * One block of the deleted node, under one retry bound: each attempt decides on the block as last
 * read — empty: a conditional delete; else one UPDATE making it unowned — and a lost race
 * (Conflict) re-reads and decides again, at most `ctx.maxRetries` attempts in all (the loop used
 * to wrap updateBlock's own retry loop: maxRetries² attempts).
 */
async function releaseOne(
  ctx: Context,
  block: IPAMBlock,
  node: string,
): Promise<'deleted' | 'unowned' | 'gone'> {
  let current: IPAMBlock | undefined = block;
  for (let attempt = 1; current && current.spec.affinity === node; attempt++) {
    if (isEmpty(current)) {
      if (await deleteIfUnchanged(ctx, current)) return 'deleted';
    } else {
      try {
        await ctx.ds.blocks.update(setAffinity(current, null, ctx.clock()));
        return 'unowned';
      } catch (error) {
        if (isNotFound(error)) return 'gone';
        if (!isConflict(error)) throw error;
        ctx.stats.conflicts += 1;
      }
    }
    if (attempt >= ctx.maxRetries)
      throw new RetriesExhaustedError(
        `IPAMBlock ${block.metadata.name}: gave up releasing node ${node}'s affinity after ${attempt} attempts`,
        attempt,
      );
    ctx.stats.retries += 1;
    await backoff(ctx, attempt);
    current = await ctx.ds.blocks.get(block.metadata.name);
  }
  return 'gone';
}
