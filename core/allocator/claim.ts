/**
 * Claiming a block (docs/design-core.md §2): the search starts at an offset derived from the node name (nodes
 * do not race for one CIDR; concurrent claims of one node meet on the same CIDR and share the
 * winner's block). One LIST of block metadata per region (labels.ts: /16, /112) finds the taken
 * ranges, tested for overlap (any block size); the search jumps over merged taken intervals —
 * O(blocks in the region), never O(pool size): a 2^74-block IPv6 pool is fine.
 * The CREATE decides ownership; AlreadyExists means someone else won: move on.
 */
import { createHash } from 'node:crypto';
import { blockNameOf, cidrFromBlockName } from '../address/block-cidr.ts';
import { bitsOf, cidrLast, cidrsOverlap } from '../address/ip.ts';
import type { Cidr } from '../address/ip.ts';
import { newBlock } from '../block/block.ts';
import { isAllocatable } from '../block/frozen.ts';
import { nodeLabel, REGION_PREFIX, regionOf, regionSelector } from '../block/labels.ts';
import { isAlreadyExists } from '../errors/already-exists.ts';
import { apiRefusalOf } from '../errors/api-refusal.ts';
import type { IPAMBlock, IPPool } from '../resources.ts';
import { trustedAffine } from './block-trust.ts';
import type { Context } from './context.ts';
import { poolBlockSize, poolCidr } from './pools.ts';

/** An inclusive range of block indexes inside one pool. */
interface Span {
  lo: bigint;
  hi: bigint;
}

// 16: far more than nodes that realistically race for one neighbourhood of the pool; past it
// the LIST is stale enough that re-listing (the caller's next round) is better.
const MAX_CREATE_ATTEMPTS = 16;

// 256: every /16 region of an IPv4 /8 pool; in an IPv6 pool 256 full regions in a row means
// 256 × 1,024 blocks claimed around this node's offset — report the pool as full for this node.
const MAX_REGIONS = 256n;

/**
 * Claims a free block of `pool` for `node`: regions (core/block/labels.ts) are searched in order
 * from the one holding the node's offset, one metadata LIST each.
 * @param reservations wholly reserved blocks are never claimed
 * @returns the block (affine to `node`; possibly created by a concurrent call for the same node),
 *   or undefined when no free block was found
 */
export async function claimBlock(
  ctx: Context,
  pool: IPPool,
  node: string,
  reservations: readonly Cidr[],
  limit?: BlockLimit,
): Promise<IPAMBlock | 'limit' | undefined> {
  const cidr = poolCidr(pool);
  const blockSize = poolBlockSize(pool);
  const areaPrefix = Math.max(cidr.prefixLength, REGION_PREFIX[cidr.family]);
  const areas = 1n << BigInt(areaPrefix - cidr.prefixLength);
  const perArea = 1n << BigInt(blockSize - areaPrefix);
  const offset = offsetFor(node, pool.metadata.name, areas * perArea);
  for (let step = 0n; step < areas && step < MAX_REGIONS; step++) {
    const index = (offset / perArea + step) % areas;
    const area: Cidr = {
      family: cidr.family,
      base: cidr.base + (index << BigInt(bitsOf(cidr.family) - areaPrefix)),
      prefixLength: areaPrefix,
    };
    const block = await claimInArea(ctx, {
      pool,
      node,
      area,
      blockSize,
      reservations,
      start: step === 0n ? offset % perArea : 0n,
      ...(limit ? { limit } : {}),
    });
    if (block) return block;
  }
  return undefined;
}

/**
 * maxBlocksPerNode as the caller saw it: `held` trusted blocks affine to the node by their spec
 * (block-trust.ts trustedAffine) and not frozen (core/block/frozen.ts) when it listed the node's
 * blocks. The region LIST right before the CREATE is a fresher view; when its labels show the
 * node at the limit already (a concurrent ADD of the node claimed meanwhile), the node's blocks of
 * the region are read in full and only the trusted, unfrozen ones affine by their spec count —
 * labels alone never count against a node (anyone who may create a block may label it "affine to
 * B"), and a frozen block, never allocated from, must not lock the node out of claiming. At the
 * limit the claim stops with 'limit'.
 */
export interface BlockLimit {
  held: number;
  max: number;
  /** Every IPPool (what trust is judged against). */
  pools: readonly IPPool[];
}

interface AreaClaim {
  limit?: BlockLimit;
  pool: IPPool;
  node: string;
  /** The part of the pool searched: the pool ∩ one region. */
  area: Cidr;
  blockSize: number;
  reservations: readonly Cidr[];
  /** Block index inside the area to start from. */
  start: bigint;
}

/** One LIST of the region's block metadata, then CREATEs until one wins or the area is full. */
async function claimInArea(ctx: Context, job: AreaClaim): Promise<IPAMBlock | 'limit' | undefined> {
  const { area, blockSize, node, pool } = job;
  const { taken, affineHere } = await listTakenSpans(ctx, area, blockSize, job.reservations, node);
  if (job.limit && (await atLimit(ctx, job.limit, area, node, affineHere))) return 'limit';
  const count = 1n << BigInt(blockSize - area.prefixLength);
  let start = job.start;
  let waits = 0;
  let waitedMs = 0;
  for (let attempt = 0; attempt < MAX_CREATE_ATTEMPTS; attempt++) {
    const index = firstFree(taken, start, count);
    if (index === undefined) return undefined;
    const block = candidateAt(area, blockSize, index);
    try {
      const created = await ctx.ds.blocks.create(
        newBlock({ cidr: block, pool: pool.metadata.name, node, nowMs: ctx.clock() }),
      );
      ctx.stats.claims += 1;
      return created;
    } catch (error) {
      if (isPoolNotListedYet(error) && waitedMs < ctx.unlistedPool.waitMs) {
        const delay = Math.min(2_000, 250 * 2 ** Math.min(waits++, 3));
        // the caller's deadline during the wait: the refusal, which names the pool and ConfigMap
        try {
          await ctx.unlistedPool.sleep(delay);
        } catch (cut) {
          throw ctx.signal?.aborted ? error : cut;
        }
        waitedMs += delay;
        attempt--;
        continue;
      }
      if (!isAlreadyExists(error)) throw error;
      ctx.stats.claimCollisions += 1;
      const existing = await ctx.ds.blocks.get(blockNameOf(block));
      // A concurrent claim of this node: share its block, unless it is frozen (never allocated from).
      if (existing?.spec.affinity === node && isAllocatable(existing)) return existing;
      insertSpan(taken, { lo: index, hi: index });
      start = index + 1n < count ? index + 1n : 0n;
    }
  }
  return undefined;
}

/**
 * True when the claims admission policy refused the CREATE because the controller has not yet
 * listed the block's pool in its ConfigMap (the chart's message: "… which the controller has not
 * listed in ConfigMap …"): the first seconds after an install or after a pool is created. Such a
 * claim waits for the list (AllocatorOptions.unlistedPool) before the refusal is the answer.
 */
function isPoolNotListedYet(error: unknown): boolean {
  const refusal = apiRefusalOf(error);
  return (
    refusal?.kind === 'admission' &&
    refusal.message.includes('which the controller has not listed in ConfigMap')
  );
}

/**
 * True when the node holds `limit.max` blocks: by the caller's count, or by the region's labels
 * (`labelled`) confirmed by a LIST of the node's labelled blocks in the region, counting only
 * trusted, unfrozen blocks affine by their spec. The extra LIST runs only when the labels alone
 * would stop the claim.
 */
async function atLimit(
  ctx: Context,
  limit: BlockLimit,
  area: Cidr,
  node: string,
  labelled: number,
): Promise<boolean> {
  if (limit.held >= limit.max) return true;
  if (labelled < limit.max) return false;
  const selector = regionSelector(regionOf(area));
  const listed = await ctx.ds.blocks.list({
    labelSelector: { matchLabels: { ...selector.matchLabels, [nodeLabel(node)]: 'affine' } },
  });
  return trustedAffine(listed, limit.pools, node).filter(isAllocatable).length >= limit.max;
}

/** Index spans of `area` covered by existing blocks of any size, or by whole reservations. */
async function listTakenSpans(
  ctx: Context,
  area: Cidr,
  blockSize: number,
  reservations: readonly Cidr[],
  node: string,
): Promise<{ taken: Span[]; affineHere: number }> {
  const metas = await ctx.ds.blocks.listMetadata({ labelSelector: regionSelector(regionOf(area)) });
  const ranges: Cidr[] = metas.map((meta) => cidrFromBlockName(meta.name)).filter((c) => c !== undefined);
  // A reservation covering a whole block makes that block useless; a smaller one only removes
  // ordinals (block.ts pickOrdinal's `excluded`).
  ranges.push(...reservations.filter((r) => r.family === area.family && r.prefixLength <= blockSize));
  const mine = nodeLabel(node);
  return {
    taken: mergeSpans(ranges.map((range) => spanOf(area, blockSize, range)).filter((s) => s !== undefined)),
    affineHere: metas.filter((meta) => meta.labels?.[mine] === 'affine').length,
  };
}

/** The block indexes of `pool` a range touches, or undefined when it lies outside the pool. */
function spanOf(pool: Cidr, blockSize: number, range: Cidr): Span | undefined {
  const lo = range.base > pool.base ? range.base : pool.base;
  const last = cidrLast(range) < cidrLast(pool) ? cidrLast(range) : cidrLast(pool);
  if (lo > last) return undefined;
  const shift = BigInt(bitsOf(pool.family) - blockSize);
  return { lo: (lo - pool.base) >> shift, hi: (last - pool.base) >> shift };
}

function mergeSpans(spans: Span[]): Span[] {
  spans.sort((a, b) => (a.lo < b.lo ? -1 : a.lo > b.lo ? 1 : 0));
  const merged: Span[] = [];
  for (const span of spans) {
    const tail = merged.at(-1);
    if (tail && span.lo <= tail.hi + 1n) tail.hi = span.hi > tail.hi ? span.hi : tail.hi;
    else merged.push({ ...span });
  }
  return merged;
}

function insertSpan(spans: Span[], span: Span): void {
  const merged = mergeSpans([...spans, span]);
  spans.splice(0, spans.length, ...merged);
}

/** First index ≥ start (wrapping once) not inside a span; undefined when all are taken. */
function firstFree(spans: readonly Span[], start: bigint, count: bigint): bigint | undefined {
  const after = freeFrom(spans, start);
  if (after < count) return after;
  const wrapped = freeFrom(spans, 0n);
  return wrapped < start ? wrapped : undefined;
}

/** Smallest index ≥ from outside every span (spans sorted and merged). */
function freeFrom(spans: readonly Span[], from: bigint): bigint {
  let lo = 0;
  let hi = spans.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((spans[mid]?.hi ?? -1n) < from) lo = mid + 1;
    else hi = mid;
  }
  const span = spans[lo];
  return span && span.lo <= from ? span.hi + 1n : from;
}

/** The block CIDR at `index` of the pool. */
function candidateAt(pool: Cidr, blockSize: number, index: bigint): Cidr {
  return {
    family: pool.family,
    base: pool.base + (index << BigInt(bitsOf(pool.family) - blockSize)),
    prefixLength: blockSize,
  };
}

/** Start index for `node` in a pool of `count` blocks: SHA-256(pool/node) mod count. */
function offsetFor(node: string, pool: string, count: bigint): bigint {
  const digest = createHash('sha256').update(`${pool}/${node}`).digest('hex');
  return BigInt(`0x${digest}`) % count;
}

/**
 * Gets or claims the block `block` of `pool` for a static address: an existing block is returned
 * whatever its affinity; a missing one is created affine to `node` unless an existing block of
 * another size overlaps it (left over from an older pool layout).
 * @returns the block, or the name of the overlapping block that forbids it
 */
export async function getOrClaimBlock(
  ctx: Context,
  pool: IPPool,
  node: string,
  block: Cidr,
): Promise<{ block: IPAMBlock } | { overlaps: string }> {
  const name = blockNameOf(block);
  const existing = await ctx.ds.blocks.get(name);
  if (existing) return { block: existing };
  const metas = await ctx.ds.blocks.listMetadata({ labelSelector: regionSelector(regionOf(block)) });
  const other = metas.find((meta) => {
    const range = cidrFromBlockName(meta.name);
    return range !== undefined && cidrsOverlap(range, block);
  });
  if (other) return { overlaps: other.name };
  try {
    const created = await ctx.ds.blocks.create(
      newBlock({ cidr: block, pool: pool.metadata.name, node, nowMs: ctx.clock() }),
    );
    ctx.stats.claims += 1;
    return { block: created };
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
    ctx.stats.claimCollisions += 1;
    const raced = await ctx.ds.blocks.get(name);
    return raced ? { block: raced } : { overlaps: name };
  }
}
