/**
 * Allocating one address from a list of candidate blocks, each under compare-and-swap, and the
 * helpers that decide which blocks are candidates.
 */
import { blockOrdinals } from '../address/block-cidr.ts';
import { cidrCovers, cidrLast, cidrsOverlap } from '../address/ip.ts';
import type { Cidr } from '../address/ip.ts';
import { allocateOrdinal, cidrOf, pickOrdinal, poolOf } from '../block/block.ts';
import type { Owner } from '../block/block.ts';
import { isAllocatable } from '../block/frozen.ts';
import type { Allocation, IPAMBlock, IPPool } from '../resources.ts';
import { updateBlock } from './cas.ts';
import type { Context } from './context.ts';
import { describe } from './describe.ts';
import { poolBlockSize, poolCidr } from './pools.ts';
import type { AllocatedAddress } from './types.ts';

/** How to allocate from candidate blocks. */
export interface TryOptions {
  owner: Owner;
  cooldownSeconds: number;
  reservations: readonly Cidr[];
  mode: 'fresh' | 'any';
  /** Only write while the block's affinity is still this (undefined: any affinity). */
  affinity?: string | null;
}

/**
 * Tries the blocks in order until one yields an address. A block that is full, gone, frozen
 * (core/block/frozen.ts: judged on the block as read for the write, so one frozen since the
 * caller listed it is passed over too), or whose affinity changed is passed over.
 * @returns the address, `'handle'` when a block already holds the owner's handle, or undefined
 */
export async function allocateFromBlocks(
  ctx: Context,
  blocks: readonly IPAMBlock[],
  options: TryOptions,
): Promise<AllocatedAddress | 'handle' | undefined> {
  type Picked = { ordinal: number; allocation: Allocation } | 'handle' | undefined;
  for (const block of blocks) {
    const outcome = await updateBlock<Picked>(ctx, block, (current) => {
      if (options.affinity !== undefined && current.spec.affinity !== options.affinity)
        return { skip: undefined };
      if (!isAllocatable(current)) return { skip: undefined };
      if (holdsHandle(current, options.owner.handle)) return { skip: 'handle' as const };
      const ordinal = pickOrdinal(current, {
        nowMs: ctx.clock(),
        cooldownSeconds: options.cooldownSeconds,
        excluded: reservedIn(cidrOf(current), options.reservations),
        mode: options.mode,
      });
      const done =
        ordinal === undefined ? undefined : allocateOrdinal(current, ordinal, options.owner, ctx.clock());
      return done && ordinal !== undefined
        ? { write: done.block, result: { ordinal, allocation: done.allocation } }
        : { skip: undefined };
    });
    if ('gone' in outcome || outcome.result === undefined) continue;
    if (outcome.result === 'handle') return 'handle';
    if (outcome.written) return describe(outcome.written, outcome.result.ordinal, outcome.result.allocation);
  }
  return undefined;
}

/** True when some ordinal of the block is held by `handle`. */
export function holdsHandle(block: IPAMBlock, handle: string): boolean {
  return Object.values(block.spec.allocations).some((allocation) => allocation.handle === handle);
}

/** Ordinals of `block` inside any reservation (never handed out automatically nor statically). */
function reservedIn(block: Cidr, reservations: readonly Cidr[]): Set<number> {
  const out = new Set<number>();
  const size = blockOrdinals(block);
  for (const reservation of reservations) {
    if (!cidrsOverlap(block, reservation)) continue;
    const from = reservation.base > block.base ? Number(reservation.base - block.base) : 0;
    const to =
      cidrLast(reservation) < cidrLast(block) ? Number(cidrLast(reservation) - block.base) : size - 1;
    for (let ordinal = from; ordinal <= to; ordinal++) out.add(ordinal);
  }
  return out;
}

/**
 * A predicate for blocks that belong to one of `pools`: labelled with the pool, inside its CIDR,
 * and of its block size (blocks left from another layout are not allocated from).
 */
export function inPools(pools: readonly IPPool[]): (block: IPAMBlock) => boolean {
  const byName = new Map(pools.map((pool) => [pool.metadata.name, pool]));
  return (block) => {
    const pool = byName.get(poolOf(block));
    if (!pool) return false;
    const cidr = cidrOf(block);
    return cidr.prefixLength === poolBlockSize(pool) && cidrCovers(poolCidr(pool), cidr);
  };
}
