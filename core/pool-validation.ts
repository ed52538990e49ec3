/**
 * Pool validation beyond the CRD schema (which cannot see other objects): a pool must not overlap
 * another pool, nor existing blocks of another block size (Calico #10778: a re-created pool with
 * a new block size produced overlapping blocks and duplicate addresses). ipamctl and the
 * controller call it before creating/accepting a pool; the allocator independently refuses the
 * later of two overlapping pools (pools.ts usablePools).
 */
import { DEFAULT_BLOCK_SIZE, cidrFromBlockName, isAllowedBlockSize } from './address/block-cidr.ts';
import { cidrsOverlap, parseCidr } from './address/ip.ts';
import { familySelector } from './block/labels.ts';
import type { Datastore } from './datastore/datastore.ts';
import type { IPPool } from './resources.ts';

/**
 * Checks `pool` against the other pools and the existing blocks (1 LIST of pools, 1 LIST of block
 * metadata). A pool with the same name is the pool itself (an update) and is not a conflict.
 * @returns `{ok: true}` or `{ok: false, message}` naming the conflicting object
 */
export async function validatePool(
  ds: Datastore,
  pool: IPPool,
): Promise<{ ok: true } | { ok: false; message: string }> {
  const name = pool.metadata.name;
  const cidr = parseCidr(pool.spec.cidr);
  if (!cidr)
    return {
      ok: false,
      message: `IPPool "${name}": spec.cidr ${JSON.stringify(pool.spec.cidr)} is not a masked CIDR`,
    };
  const blockSize = pool.spec.blockSize ?? DEFAULT_BLOCK_SIZE[cidr.family];
  if (!isAllowedBlockSize(cidr.family, blockSize))
    return {
      ok: false,
      message: `IPPool "${name}": blockSize ${blockSize} is not allowed for IPv${cidr.family}`,
    };
  if (cidr.prefixLength > blockSize)
    return {
      ok: false,
      message: `IPPool "${name}": cidr ${pool.spec.cidr} is smaller than one block (/${blockSize})`,
    };
  const [pools, blocks] = await Promise.all([
    ds.pools.list(),
    ds.blocks.listMetadata({ labelSelector: familySelector(cidr.family) }),
  ]);
  for (const other of pools) {
    const otherCidr = parseCidr(other.spec.cidr);
    if (other.metadata.name !== name && otherCidr && cidrsOverlap(cidr, otherCidr)) {
      return {
        ok: false,
        message: `IPPool "${name}" (${pool.spec.cidr}) overlaps IPPool "${other.metadata.name}" (${other.spec.cidr})`,
      };
    }
  }
  for (const meta of blocks) {
    const blockCidr = cidrFromBlockName(meta.name);
    if (blockCidr && cidrsOverlap(cidr, blockCidr) && blockCidr.prefixLength !== blockSize) {
      return {
        ok: false,
        message: `IPPool "${name}" (${pool.spec.cidr}, blockSize ${blockSize}) overlaps IPAMBlock "${meta.name}" of block size ${blockCidr.prefixLength}; release those blocks first`,
      };
    }
  }
  return { ok: true };
}
