/**
 * STATUS's question (CNI 1.1.0 STATUS): could an ADD on this node get an address of every
 * configured family right now? For each family, over the pools this node may use (usable,
 * nodeSelector matching; namespaceSelector is not considered — STATUS is per network, not per
 * pod): free ordinals in blocks it may allocate from (its own; others' unless strictAffinity)
 * plus whole blocks still unclaimed (if it may claim). IPReservations and cooldowns are not
 * subtracted, so "available" can be optimistic; "unavailable" is exact. Cost: 1 LIST of blocks.
 */
import { parseCidr, type IPFamily } from '../../core/address/ip.ts';
import { reservedOrdinals } from '../../core/address/block-cidr.ts';
import { poolBlockSize, poolCidr, type PoolSnapshot } from '../../core/allocator/pools.ts';
import { capacityOf } from '../../core/block/block.ts';
import { POOL_LABEL } from '../../core/block/labels.ts';
import type { Datastore } from '../../core/datastore/datastore.ts';
import type { IPAMBlock, IPPool } from '../../core/resources.ts';
import { matchesSelector } from '../../core/selector.ts';
import type { StatusOutcome } from './port.ts';

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

/** Free addresses this node could get from `pool` (a lower bound of 1 is all STATUS needs). */
function freeIn(pool: IPPool, blocks: readonly IPAMBlock[], q: StatusQuery): bigint {
  const s = q.snapshot.settings;
  const mine = blocks.filter((b) => b.metadata.labels?.[POOL_LABEL] === pool.metadata.name);
  let free = 0n;
  for (const b of mine) {
    if (s.strictAffinity && b.spec.affinity !== q.node) continue;
    free += BigInt(capacityOf(b) - Object.keys(b.spec.allocations).length);
  }
  const owned = mine.filter((b) => b.spec.affinity === q.node).length;
  if (s.autoAllocateBlocks && owned < s.maxBlocksPerNode) {
    const cidr = poolCidr(pool);
    const size = poolBlockSize(pool);
    const total = 1n << BigInt(size - cidr.prefixLength);
    const unclaimed = total - BigInt(mine.length);
    const block = parseCidr(`${pool.spec.cidr.split('/')[0]}/${size}`, { strict: false });
    const per = block
      ? (1n << BigInt((cidr.family === 4 ? 32 : 128) - size)) - BigInt(reservedOrdinals(block).length)
      : 0n;
    if (unclaimed > 0n) free += unclaimed * per;
  }
  return free;
}

export async function poolStatus(ds: Datastore, q: StatusQuery): Promise<StatusOutcome> {
  const blocks = await ds.blocks.list();
  for (const family of q.families) {
    const pools = eligible(q, family);
    if (pools.length === 0)
      return { kind: 'unavailable', message: `no usable IPv${family} pool for node ${q.node}` };
    if (!pools.some((p) => freeIn(p, blocks, q) > 0n)) {
      return {
        kind: 'unavailable',
        message: `IPv${family} pools ${pools.map((p) => p.metadata.name).join(', ')} have no free address for node ${q.node}`,
      };
    }
  }
  return { kind: 'available' };
}
