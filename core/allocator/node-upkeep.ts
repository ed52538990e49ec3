/**
 * The node agent's two writes (docs/design-agent.md §Pre-claim): claiming one more block for a
 * node ahead of demand, and releasing one of its idle blocks. They are the allocator's own claim
 * (claim.ts) and compare-and-delete (release.ts), so the agent and the plugin write blocks the
 * same way; what the agent adds is only when to call them.
 */
import type { Cidr } from '../address/ip.ts';
import type { Datastore } from '../datastore/datastore.ts';
import type { IPAMBlock, IPPool } from '../resources.ts';
import { claimBlock } from './claim.ts';
import { contextOf } from './context.ts';
import type { AllocatorOptions } from './context.ts';
import { deleteIfUnchanged } from './release.ts';

/** What {@link claimNodeBlock} claims. */
export interface NodeBlockClaim {
  readonly pool: IPPool;
  readonly node: string;
  /** CIDRs of every IPReservation (wholly reserved blocks are never claimed). */
  readonly reservations: readonly Cidr[];
  /**
   * Trusted, unfrozen blocks of the pool's family affine to `node` by spec (trustedAffine, then
   * core/block/frozen.ts isAllocatable), as the caller saw them: what maxBlocksPerNode counts.
   */
  readonly held: number;
  /** Every IPPool (trust is judged against them). */
  readonly pools: readonly IPPool[];
  /** IPAMConfig maxBlocksPerNode. */
  readonly maxBlocksPerNode: number;
}

/**
 * Claims one block of `claim.pool` affine to `claim.node` (one metadata LIST of a region, then
 * CREATEs: claim.ts). A fresher view of the region that shows the node at maxBlocksPerNode
 * already stops it.
 * @returns the block (possibly one a concurrent claim of the same node created), `limit`, or
 *   `full` when the pool has no free block
 * @throws UnavailableError / ApiError from the datastore
 */
export async function claimNodeBlock(
  ds: Datastore,
  claim: NodeBlockClaim,
  options: AllocatorOptions = {},
): Promise<IPAMBlock | 'limit' | 'full'> {
  if (claim.held >= claim.maxBlocksPerNode) return 'limit';
  const got = await claimBlock(contextOf(ds, options), claim.pool, claim.node, claim.reservations, {
    held: claim.held,
    max: claim.maxBlocksPerNode,
    pools: claim.pools,
  });
  return got ?? 'full';
}

/**
 * Deletes `block` only if it is unchanged since it was read (DeleteOptions.preconditions on
 * resourceVersion and uid): a block that received an allocation, or was released and claimed
 * again, meanwhile is kept. The caller decides that the block qualifies (empty long enough, not
 * the node's last of its family).
 * @returns true when deleted; false when it changed or is already gone
 * @throws UnavailableError / ApiError from the datastore
 */
export async function releaseIdleBlock(
  ds: Datastore,
  block: IPAMBlock,
  options: AllocatorOptions = {},
): Promise<boolean> {
  return deleteIfUnchanged(contextOf(ds, options), block);
}
