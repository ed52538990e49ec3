/**
 * Claiming a block (DESIGN §4): one LIST of block metadata finds the taken ranges; the search
 * starts at an offset derived from the node name (nodes do not race for one CIDR; concurrent
 * claims of one node meet on the same CIDR and share the winner's block) and jumps over merged
 * taken intervals — O(taken blocks), never O(pool size), so a 2^70-block IPv6 pool is fine.
 * The CREATE decides ownership; AlreadyExists means someone else won: move on.
 */
import { createHash } from 'node:crypto';
import { blockNameOf, cidrFromBlockName } from '../address/block-cidr.ts';
import { bitsOf, cidrLast, cidrsOverlap } from '../address/ip.ts';
import type { Cidr } from '../address/ip.ts';
import { newBlock } from '../block/block.ts';
import { familySelector } from '../block/labels.ts';
import { isAlreadyExists } from '../errors/already-exists.ts';
import type { IPAMBlock, IPPool } from '../resources.ts';
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

/**
 * Claims a free block of `pool` for `node`.
 * @param reservations wholly reserved blocks are never claimed
 * @returns the block (affine to `node`; possibly created by a concurrent call for the same node),
 *   or undefined when the pool has no free block
 */
export async function claimBlock(ctx: Context, pool: IPPool, node: string, reservations: readonly Cidr[]): Promise<IPAMBlock | undefined> {
  const cidr = poolCidr(pool);
  const blockSize = poolBlockSize(pool);
  const taken = await listTakenSpans(ctx, pool, reservations);
  const count = 1n << BigInt(blockSize - cidr.prefixLength);
  let start = offsetFor(node, pool.metadata.name, count);
  for (let attempt = 0; attempt < MAX_CREATE_ATTEMPTS; attempt++) {
    const index = firstFree(taken, start, count);
    if (index === undefined) return undefined;
    const block = candidateAt(cidr, blockSize, index);
    try {
      const created = await ctx.ds.blocks.create(newBlock({ cidr: block, pool: pool.metadata.name, node, nowMs: ctx.clock() }));
      ctx.stats.claims += 1;
      return created;
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
      ctx.stats.claimCollisions += 1;
      const existing = await ctx.ds.blocks.get(blockNameOf(block));
      if (existing?.spec.affinity === node) return existing;
      insertSpan(taken, { lo: index, hi: index });
      start = index + 1n < count ? index + 1n : 0n;
    }
  }
  return undefined;
}

/** Index spans of the pool covered by existing blocks of any size, or by whole reservations. */
async function listTakenSpans(ctx: Context, pool: IPPool, reservations: readonly Cidr[]): Promise<Span[]> {
  const cidr = poolCidr(pool);
  const metas = await ctx.ds.blocks.listMetadata({ labelSelector: familySelector(cidr.family) });
  const ranges: Cidr[] = metas.map((meta) => cidrFromBlockName(meta.name)).filter((c) => c !== undefined);
  const blockSize = poolBlockSize(pool);
  // A reservation covering a whole block makes that block useless; a smaller one only removes
  // ordinals (block.ts pickOrdinal's `excluded`).
  ranges.push(...reservations.filter((r) => r.family === cidr.family && r.prefixLength <= blockSize));
  return mergeSpans(ranges.map((range) => spanOf(cidr, blockSize, range)).filter((s) => s !== undefined));
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
export function firstFree(spans: readonly Span[], start: bigint, count: bigint): bigint | undefined {
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
  return { family: pool.family, base: pool.base + (index << BigInt(bitsOf(pool.family) - blockSize)), prefixLength: blockSize };
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
export async function getOrClaimBlock(ctx: Context, pool: IPPool, node: string, block: Cidr): Promise<{ block: IPAMBlock } | { overlaps: string }> {
  const name = blockNameOf(block);
  const existing = await ctx.ds.blocks.get(name);
  if (existing) return { block: existing };
  const metas = await ctx.ds.blocks.listMetadata({ labelSelector: familySelector(block.family) });
  const other = metas.find((meta) => {
    const range = cidrFromBlockName(meta.name);
    return range !== undefined && cidrsOverlap(range, block);
  });
  if (other) return { overlaps: other.name };
  try {
    const created = await ctx.ds.blocks.create(newBlock({ cidr: block, pool: pool.metadata.name, node, nowMs: ctx.clock() }));
    ctx.stats.claims += 1;
    return { block: created };
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
    ctx.stats.claimCollisions += 1;
    const raced = await ctx.ds.blocks.get(name);
    return raced ? { block: raced } : { overlaps: name };
  }
}
