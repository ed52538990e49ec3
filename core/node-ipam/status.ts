/**
 * STATUS's question (CNI 1.1.0 STATUS): could an ADD on this node get an address of every
 * configured family right now? For each family, over the pools this node may use (usable,
 * nodeSelector matching; namespaceSelector is not considered — STATUS is per network, not per
 * pod), the first of these that finds room answers yes:
 *   1. a free ordinal in a block affine to this node (from one LIST of the node's own blocks);
 *   2. a block still unclaimed in the pool, if the node may claim one (autoAllocateBlocks, fewer
 *      than maxBlocksPerNode of the family): a metadata-only LIST of the pool's blocks;
 *   3. a free ordinal in another node's block, unless strictAffinity: a LIST of the pool's
 *      blocks of the family (the ADD would borrow).
 * A frozen block (core/block/frozen.ts) has no room and does not count against maxBlocksPerNode,
 * as for the allocator.
 * IPReservations and cooldowns are not subtracted, so "ready" can be optimistic; "no room"
 * is exact. Cost: runtimes poll STATUS every few seconds per node, so the usual answer (the node
 * has room in its own blocks) is one LIST selected by the node's label — never a LIST of every
 * block of the cluster; steps 2 and 3 run only when the node's blocks are full.
 */
import { blockCapacity } from '../address/block-cidr.ts';
import { blockFree, cidrOf } from '../block/block.ts';
import { isAllocatable } from '../block/frozen.ts';
import { familySelector, nodeBlocksSelector, POOL_LABEL } from '../block/labels.ts';
import type { IPFamily } from '../address/ip.ts';
import { poolBlockSize, poolCidr, type PoolSnapshot } from '../allocator/pools.ts';
import type { Datastore } from '../datastore/datastore.ts';
import type { IPAMBlock, IPPool } from '../resources.ts';
import { matchesSelector } from '../selector.ts';
import type { StatusOutcome } from './service-types.ts';

export interface StatusQuery {
  readonly node: string;
  readonly families: readonly IPFamily[];
  /** Pools named in the config (names or CIDRs); empty = automatic pools. */
  readonly pools: readonly string[];
  readonly snapshot: PoolSnapshot;
  readonly nodeLabels: Readonly<Record<string, string>>;
}

function eligible(q: StatusQuery, family: IPFamily): IPPool[] {
  const named = (p: IPPool): boolean => q.pools.includes(p.metadata.name) || q.pools.includes(p.spec.cidr);
  return q.snapshot.usable.filter(
    (p) =>
      poolCidr(p).family === family &&
      matchesSelector(p.spec.nodeSelector, q.nodeLabels) &&
      (q.pools.length > 0 ? named(p) : (p.spec.assignmentMode ?? 'Automatic') === 'Automatic'),
  );
}

const inPool = (pool: IPPool) => (b: IPAMBlock) => b.metadata.labels?.[POOL_LABEL] === pool.metadata.name;
const hasRoom = (b: IPAMBlock): boolean => blockFree(b) > 0;

/** Blocks of `pool` that were never claimed (a lower bound of 1 is all STATUS needs). */
function unclaimedIn(pool: IPPool, claimed: number): bigint {
  const cidr = poolCidr(pool);
  const size = poolBlockSize(pool);
  const first = { family: cidr.family, base: cidr.base, prefixLength: size };
  if (blockCapacity(first) <= 0) return 0n;
  return (1n << BigInt(size - cidr.prefixLength)) - BigInt(claimed);
}

/** Whether an ADD on `q.node` could get an address of `family` from one of `pools`. */
async function roomFor(
  ds: Datastore,
  q: StatusQuery,
  family: IPFamily,
  pools: readonly IPPool[],
  mine: readonly IPAMBlock[],
): Promise<boolean> {
  const s = q.snapshot.settings;
  const own = mine.filter((b) => b.spec.affinity === q.node);
  if (pools.some((p) => own.filter(inPool(p)).some(hasRoom))) return true;
  const held = own.filter((b) => cidrOf(b).family === family && isAllocatable(b));
  if (s.autoAllocateBlocks && held.length < s.maxBlocksPerNode) {
    for (const pool of pools) {
      const claimed = await ds.blocks.listMetadata({
        labelSelector: familySelector(family, pool.metadata.name),
      });
      if (unclaimedIn(pool, claimed.length) > 0n) return true;
    }
  }
  if (s.strictAffinity) return false;
  for (const pool of pools) {
    const blocks = await ds.blocks.list({ labelSelector: familySelector(family, pool.metadata.name) });
    if (blocks.some((b) => b.spec.affinity !== q.node && hasRoom(b))) return true;
  }
  return false;
}

/**
 * STATUS over `ds` (the node's blocks; the pool LISTs of steps 2 and 3 only when they are full).
 * @returns `ready`, or `notReady` naming the family and pools with no room (or no usable pool)
 * @throws what `ds` throws (bind the caller's signal with withSignal)
 */
export async function poolStatus(ds: Datastore, q: StatusQuery): Promise<StatusOutcome> {
  const mine = await ds.blocks.list({ labelSelector: nodeBlocksSelector(q.node) });
  for (const family of q.families) {
    const pools = eligible(q, family);
    if (pools.length === 0)
      return { kind: 'notReady', message: `no usable IPv${family} pool for node ${q.node}` };
    if (!(await roomFor(ds, q, family, pools, mine))) {
      return {
        kind: 'notReady',
        message: `IPv${family} pools ${pools.map((p) => p.metadata.name).join(', ')} have no free address for node ${q.node}`,
      };
    }
  }
  return { kind: 'ready' };
}
