/**
 * Checks of blocks against blocks and pools (docs/design-cli.md §What it reports): one address in two blocks, overlapping
 * blocks, overlapping pools, blocks outside every pool, broken block invariants (core's
 * checkBlockInvariants), blocks whose size is not their pool's blockSize, blocks affine to deleted
 * nodes, empty blocks. Pure functions of the snapshot.
 */
import {
  addressTextAt,
  checkBlockInvariants,
  cidrCovers,
  cidrLast,
  formatCidr,
  parseCidr,
  POOL_LABEL,
  poolBlockSize,
} from 'blockipam/core';
import type { Cidr, IPAMBlock, IPPool } from 'blockipam/core';
import { problem } from './problems.ts';
import type { Problem } from './problems.ts';
import type { Snapshot } from './snapshot.ts';

/** A named CIDR (a block or a pool). */
interface Ranged {
  name: string;
  cidr: Cidr;
}

/** Blocks with a parseable CIDR (an unparseable one is reported by the invariant check). */
export function rangedBlocks(blocks: readonly IPAMBlock[]): Ranged[] {
  return blocks.flatMap((b) => {
    const cidr = parseCidr(b.spec.cidr);
    return cidr ? [{ name: b.metadata.name, cidr }] : [];
  });
}

function rangedPools(pools: readonly IPPool[]): Ranged[] {
  return pools.flatMap((p) => {
    const cidr = parseCidr(p.spec.cidr);
    return cidr ? [{ name: p.metadata.name, cidr }] : [];
  });
}

/**
 * Pairs of overlapping ranges, by a sweep over ranges sorted by family and base: each range that
 * starts before the furthest end seen so far overlaps the range holding that end. O(n log n);
 * names at least one partner for every overlapping range.
 */
export function overlaps(ranges: readonly Ranged[]): [Ranged, Ranged][] {
  const sorted = [...ranges].sort(
    (a, b) =>
      a.cidr.family - b.cidr.family ||
      (a.cidr.base < b.cidr.base
        ? -1
        : a.cidr.base > b.cidr.base
          ? 1
          : a.cidr.prefixLength - b.cidr.prefixLength),
  );
  const pairs: [Ranged, Ranged][] = [];
  let widest: Ranged | undefined;
  for (const range of sorted) {
    if (widest && widest.cidr.family === range.cidr.family && range.cidr.base <= cidrLast(widest.cidr))
      pairs.push([widest, range]);
    if (!widest || widest.cidr.family !== range.cidr.family || cidrLast(range.cidr) > cidrLast(widest.cidr))
      widest = range;
  }
  return pairs;
}

/** Addresses allocated in more than one block. */
export function duplicateAddresses(blocks: readonly IPAMBlock[]): Problem[] {
  const holders = new Map<string, { block: string; handle: string }[]>();
  for (const block of blocks) {
    const cidr = parseCidr(block.spec.cidr);
    if (!cidr) continue;
    for (const [key, allocation] of Object.entries(block.spec.allocations)) {
      const address = addressTextAt(cidr, Number(key));
      const list = holders.get(address) ?? [];
      list.push({ block: block.metadata.name, handle: allocation.handle });
      holders.set(address, list);
    }
  }
  return [...holders.entries()]
    .filter(([, list]) => list.length > 1)
    .map(([address, list]) =>
      problem(
        'duplicate-address',
        `${address} is allocated in ${list.map((h) => `IPAMBlock ${h.block} (handle ${h.handle})`).join(' and in ')}`,
        list.map((h) => `IPAMBlock/${h.block}`),
      ),
    );
}

/** Overlapping blocks and overlapping pools. */
export function overlapProblems(snapshot: Snapshot): Problem[] {
  const blocks = overlaps(rangedBlocks(snapshot.blocks)).map(([a, b]) =>
    problem(
      'overlapping-blocks',
      `IPAMBlock ${a.name} (${formatCidr(a.cidr)}) overlaps IPAMBlock ${b.name} (${formatCidr(b.cidr)})`,
      [`IPAMBlock/${a.name}`, `IPAMBlock/${b.name}`],
    ),
  );
  const pools = overlaps(rangedPools(snapshot.pools)).map(([a, b]) =>
    problem(
      'overlapping-pools',
      `IPPool ${a.name} (${formatCidr(a.cidr)}) overlaps IPPool ${b.name} (${formatCidr(b.cidr)})`,
      [`IPPool/${a.name}`, `IPPool/${b.name}`],
    ),
  );
  return [...blocks, ...pools];
}

/** Blocks no pool covers wholly. */
export function blocksOutsidePools(snapshot: Snapshot): Problem[] {
  const pools = rangedPools(snapshot.pools);
  return rangedBlocks(snapshot.blocks)
    .filter((block) => !pools.some((pool) => cidrCovers(pool.cidr, block.cidr)))
    .map((block) =>
      problem(
        'block-outside-pools',
        `IPAMBlock ${block.name} (${formatCidr(block.cidr)}) lies outside every IPPool`,
        [`IPAMBlock/${block.name}`],
      ),
    );
}

/** Core's block invariants, one problem per broken rule. */
export function invariantProblems(snapshot: Snapshot): Problem[] {
  return snapshot.blocks.flatMap((block) =>
    checkBlockInvariants(block, { nowMs: snapshot.startedAtMs }).map((text) =>
      problem('invalid-block', text, [`IPAMBlock/${block.metadata.name}`]),
    ),
  );
}

/**
 * Blocks whose prefix length differs from their pool's blockSize (Calico #10778: a pool recreated
 * with another blockSize over old blocks; the allocator's region arithmetic assumes one size per
 * pool). The pool is the one named by the block's pool label; a block without a live labelled
 * pool is judged against the pools covering it (none covering: block-outside-pools says so).
 */
export function blockSizeProblems(snapshot: Snapshot): Problem[] {
  const pools = snapshot.pools.flatMap((p) => {
    const cidr = parseCidr(p.spec.cidr);
    return cidr ? [{ pool: p, cidr }] : [];
  });
  const out: Problem[] = [];
  for (const block of snapshot.blocks) {
    const cidr = parseCidr(block.spec.cidr);
    if (!cidr) continue;
    const label = block.metadata.labels?.[POOL_LABEL];
    const named = pools.filter((p) => p.pool.metadata.name === label);
    const judges = named.length > 0 ? named : pools.filter((p) => cidrCovers(p.cidr, cidr));
    for (const { pool } of judges) {
      const size = poolBlockSize(pool);
      if (size === cidr.prefixLength) continue;
      out.push(
        problem(
          'block-size-mismatch',
          `IPAMBlock ${block.metadata.name} (${formatCidr(cidr)}) is a /${cidr.prefixLength} block but its IPPool ${pool.metadata.name} has blockSize ${size}`,
          [`IPAMBlock/${block.metadata.name}`, `IPPool/${pool.metadata.name}`],
        ),
      );
    }
  }
  return out;
}

/** Blocks affine to a node that no longer exists, and empty blocks (information). */
export function affinityProblems(snapshot: Snapshot): Problem[] {
  const out: Problem[] = [];
  for (const block of snapshot.blocks) {
    const { affinity, allocations } = block.spec;
    if (affinity !== null && !snapshot.nodes.has(affinity))
      out.push(
        problem(
          'block-affinity-deleted-node',
          `IPAMBlock ${block.metadata.name} is affine to node ${affinity}, which does not exist`,
          [`IPAMBlock/${block.metadata.name}`, `Node/${affinity}`],
        ),
      );
    if (Object.keys(allocations).length === 0)
      out.push(
        problem(
          'empty-block',
          `IPAMBlock ${block.metadata.name} (${block.spec.cidr}, affinity ${affinity ?? 'none'}) holds no allocation`,
          [`IPAMBlock/${block.metadata.name}`],
        ),
      );
  }
  return out;
}
