/**
 * Checks of blocks against blocks and pools (docs/design-cli.md §What it reports): one address in
 * two blocks, blocks the data path ignores (core's classifyBlocks: outside every pool, wrong pool
 * or size, forged labels, overlapping an older block), overlapping pools, broken block invariants
 * and dates in the future (core's checkBlockInvariants), `metadata.managedFields` grown past what
 * core's writes leave (core's managedFieldsExcess), blocks affine to deleted nodes, empty
 * blocks. Pure functions of the snapshot; the trust rules live in core only.
 */
import {
  addressTextAt,
  checkBlockInvariants,
  cidrLast,
  classifyBlocks,
  formatCidr,
  managedFieldsExcess,
  parseCidr,
} from 'blockipam/core';
import type { Allocation, Cidr, IPAMBlock, IPPool } from 'blockipam/core';
import { problem } from './problems.ts';
import type { Problem } from './problems.ts';
import type { Snapshot } from './snapshot.ts';

/** A named CIDR (a block or a pool). */
interface Ranged {
  name: string;
  cidr: Cidr;
}

/** Blocks or pools with a parseable CIDR (an unparseable block is reported by the invariant check). */
export function ranged(objects: readonly (IPAMBlock | IPPool)[]): Ranged[] {
  return objects.flatMap((o) => {
    const cidr = parseCidr(o.spec.cidr);
    return cidr ? [{ name: o.metadata.name, cidr }] : [];
  });
}

/** One allocation of a block with a parseable CIDR, at its ordinal and address (canonical text). */
export interface Held {
  block: IPAMBlock;
  ordinal: number;
  address: string;
  allocation: Allocation;
}

/** Every allocation of `blocks` (those with a parseable CIDR), block by block, by ordinal. */
export function allocationsIn(blocks: readonly IPAMBlock[]): Held[] {
  return blocks.flatMap((block) => {
    const cidr = parseCidr(block.spec.cidr);
    if (!cidr) return [];
    return Object.entries(block.spec.allocations).map(([key, allocation]) => {
      const ordinal = Number(key);
      return { block, ordinal, address: addressTextAt(cidr, ordinal), allocation };
    });
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
  const holders = Map.groupBy(allocationsIn(blocks), (h) => h.address);
  return [...holders.entries()]
    .filter(([, list]) => list.length > 1)
    .map(([address, list]) =>
      problem(
        'duplicate-address',
        `${address} is allocated in ${list.map((h) => `IPAMBlock ${h.block.metadata.name} (handle ${h.allocation.handle})`).join(' and in ')}`,
        list.map((h) => `IPAMBlock/${h.block.metadata.name}`),
      ),
    );
}

/**
 * One finding per block core's classifyBlocks does not trust — what every agent (routes), the
 * allocator and maxBlocksPerNode skip — with core's reason and message; for `overlap`, the older
 * block the data path keeps in its place is named (and listed in `objects`).
 */
export function ignoredBlockProblems(snapshot: Snapshot): Problem[] {
  return classifyBlocks(snapshot.blocks, snapshot.pools).ignored.map(
    ({ block, reason, message, keptBlock }) => {
      const kept = keptBlock ? `; the data path keeps IPAMBlock ${keptBlock.metadata.name}` : '';
      return problem(
        'ignored-block',
        `IPAMBlock ${block.metadata.name} is ignored by every agent and the allocator: ${reason}: ${message}${kept}`,
        [`IPAMBlock/${block.metadata.name}`, ...(keptBlock ? [`IPAMBlock/${keptBlock.metadata.name}`] : [])],
      );
    },
  );
}

/** Overlapping pools (core trusts both; the allocator shadows the later one). */
export function poolOverlapProblems(snapshot: Snapshot): Problem[] {
  return overlaps(ranged(snapshot.pools)).map(([a, b]) =>
    problem(
      'overlapping-pools',
      `IPPool ${a.name} (${formatCidr(a.cidr)}) overlaps IPPool ${b.name} (${formatCidr(b.cidr)})`,
      [`IPPool/${a.name}`, `IPPool/${b.name}`],
    ),
  );
}

/**
 * Core's block invariants as core reads the block — `checkBlockInvariants` with the clock (the
 * snapshot's start) — one problem per broken rule: `future-date` for what the clock adds (a date
 * later than now plus the clock skew, and a freed entry that date puts out of order), `invalid-block`
 * for every other. A second pass without the clock only sorts them; what it alone says is not
 * reported (it compares a future date as written, where core reads the epoch: e.g. a release after
 * an entry dated 2099 reads as out of order). Each finding once, in core's words.
 */
export function invariantProblems(snapshot: Snapshot): Problem[] {
  return snapshot.blocks.flatMap((block) => {
    const name = block.metadata.name;
    const clocked = checkBlockInvariants(block, { nowMs: snapshot.startedAtMs });
    if (clocked.length === 0) return [];
    const timeless = checkBlockInvariants(block);
    const hint = `core reads a freed entry's releasedAt or the affinityClaimTime later than now as the epoch (no effect on allocation) and reads no allocatedAt; correct the date, or remove the freed entry (its ordinal stays free), with kubectl edit ipamblock ${name}, and find who wrote it (the API server's audit log)`;
    const invalid: Problem[] = [];
    const future: Problem[] = [];
    for (const text of clocked) {
      const at = timeless.indexOf(text);
      if (at >= 0) {
        timeless.splice(at, 1);
        invalid.push(problem('invalid-block', text, [`IPAMBlock/${name}`]));
      } else future.push(problem('future-date', text, [`IPAMBlock/${name}`], hint));
    }
    return [...invalid, ...future];
  });
}

/**
 * Blocks whose `metadata.managedFields` core's `managedFieldsExcess` calls oversized: another
 * writer grew them (no write of blockipam does), and every watcher of blocks pays for each byte.
 */
export function managedFieldsProblems(snapshot: Snapshot): Problem[] {
  return snapshot.blocks.flatMap((block) => {
    const excess = managedFieldsExcess(block);
    if (!excess) return [];
    const name = block.metadata.name;
    return [
      problem(
        'oversized-managed-fields',
        `IPAMBlock ${name}: metadata.managedFields are ${excess.bytes} bytes, above the ${excess.bound} any writes of blockipam leave: every watcher of blocks reads them with each change`,
        [`IPAMBlock/${name}`],
        `the controller resets them at its next pass; at once: kubectl patch ipamblock ${name} --type=merge -p '{"metadata":{"managedFields":[{}]}}'; find their writer in the API server's audit log`,
      ),
    ];
  });
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
