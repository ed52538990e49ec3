/**
 * Release (docs/design-core.md §2) and lookup by handle. Releasing something that is not there is success
 * (an empty result). A release carrying a sequence number or pod UID frees only the allocation
 * it names: a late DEL or GC can never free an address that was handed out again. A block left
 * empty and unowned is deleted (with resourceVersion + uid preconditions).
 */
import { blockOrdinals, cidrFromBlockName, ordinalOf } from '../address/block-cidr.ts';
import { cidrContains, parseIP } from '../address/ip.ts';
import type { IP } from '../address/ip.ts';
import { cidrOf, isEmpty, releaseHandle } from '../block/block.ts';
import type { ReleasedOrdinal, ReleasePreconditions } from '../block/block.ts';
import { nodeBlocksSelector } from '../block/labels.ts';
import type { Datastore } from '../datastore/datastore.ts';
import { isConflict } from '../errors/conflict.ts';
import { isNotFound } from '../errors/not-found.ts';
import type { IPAMBlock } from '../resources.ts';
import { updateBlock } from './cas.ts';
import { contextOf } from './context.ts';
import type { AllocatorOptions, Context } from './context.ts';
import { describe } from './describe.ts';
import type { AllocatedAddress, ReleaseResult } from './types.ts';

/** Where to look: `node` narrows the search to one LIST of that node's blocks (else all blocks). */
export interface HandleQuery {
  node?: string;
}

/**
 * Preconditions of a release by handle. (A sequence number belongs to one address, so exact
 * releases by sequence go through {@link releaseAddresses}.) With `node`, only allocations made
 * for that node are released (core/block ReleasePreconditions.node).
 */
export interface HandleRelease extends HandleQuery {
  /** Free only allocations of this pod UID (allocations without one are freed). */
  podUID?: string;
}

/**
 * Releases every address held by `handle` (one per family), with optional preconditions.
 * Cost: 1 LIST (+ 1 UPDATE per block holding the handle).
 */
export async function releaseByHandle(
  ds: Datastore,
  handle: string,
  preconditions: HandleRelease = {},
  options: AllocatorOptions = {},
): Promise<ReleaseResult> {
  const ctx = contextOf(ds, options);
  const blocks = await listBlocksOf(ctx.ds, preconditions.node);
  const result: ReleaseResult = { released: [], refused: [] };
  const { node, podUID } = preconditions;
  const mine = (a: { handle: string; node: string }): boolean =>
    a.handle === handle && (node === undefined || a.node === node);
  for (const block of blocks.filter((b) => Object.values(b.spec.allocations).some(mine))) {
    await releaseInBlock(
      ctx,
      block,
      handle,
      { ...(podUID === undefined ? {} : { podUID }), ...(node === undefined ? {} : { node }) },
      result,
    );
  }
  return result;
}

/** One exact release, as ipamctl / GC / rollback carry it. */
export interface AddressRelease {
  address: string;
  handle: string;
  sequence?: number;
  podUID?: string;
  /** Block name, when known (saves the search). */
  block?: string;
}

/** An item whose block could not be read or written (the error as thrown, e.g. RetriesExhausted). */
interface ReleaseFailure {
  item: AddressRelease;
  error: Error;
}

/** Result of {@link releaseAddresses}: a {@link ReleaseResult} plus the items with nothing to free. */
export interface AddressReleaseResult extends ReleaseResult {
  /**
   * Items whose address does not hold their handle (any more): no block there, the ordinal free or
   * held by another handle, the block deleted meanwhile, or an unparseable address. Nothing was
   * written for them; as input, in input order.
   */
  gone: AddressRelease[];
  /**
   * Items of a block whose read or write failed (unreachable, RetriesExhaustedError, …): the
   * other blocks were still tried (CNI GC continues past per-item errors). Nothing of those
   * items was written. Empty when everything was decided.
   */
  failed: ReleaseFailure[];
}

/**
 * Releases exact (address, handle[, sequence, podUID]) items; mismatches are refused, absent ones
 * returned in `gone`. Items are grouped by block and each block is written once — one
 * compare-and-swap for all its items, recomputed on a conflict (Calico's ReleaseIPs does the
 * same) — blocks one after another. A block that cannot be read or written puts its items in
 * `failed` and the next block is tried. Cost: 1 LIST unless every item names its block (then 1
 * GET per block), + 1 UPDATE per block (+ re-read and retry per conflict).
 * @throws what the LIST throws (nothing was released); the signal's reason once it fires
 */
export async function releaseAddresses(
  ds: Datastore,
  items: readonly AddressRelease[],
  query: HandleQuery = {},
  options: AllocatorOptions | Context = {},
): Promise<AddressReleaseResult> {
  const ctx = 'ds' in options ? options : contextOf(ds, options);
  const result: AddressReleaseResult = { released: [], refused: [], gone: [], failed: [] };
  const listed = items.every((item) => item.block !== undefined)
    ? undefined
    : await listBlocksOf(ctx.ds, query.node);
  const groups = new Map<string, { block: IPAMBlock | undefined; items: AddressRelease[] }>();
  for (const item of items) {
    const ip = parseIP(item.address);
    const name = !ip ? undefined : listed ? listed.find((b) => blockHolds(b, ip))?.metadata.name : item.block;
    if (name === undefined) {
      result.gone.push(item);
      continue;
    }
    const group = groups.get(name) ?? { block: listed?.find((b) => b.metadata.name === name), items: [] };
    group.items.push(item);
    groups.set(name, group);
  }
  for (const [name, group] of groups) {
    try {
      const block = group.block ?? (await ctx.ds.blocks.get(name));
      if (!block) result.gone.push(...group.items);
      else await releaseItemsInBlock(ctx, block, group.items, result);
    } catch (error) {
      if (ctx.signal?.aborted) throw error;
      for (const item of group.items) result.failed.push({ item, error: error as Error });
    }
  }
  result.gone.sort((a, b) => items.indexOf(a) - items.indexOf(b));
  return result;
}

/** What one block's change decided for its items. */
interface BlockRelease extends ReleaseResult {
  gone: AddressRelease[];
}

/**
 * Releases `items` (all in `block`) in one compare-and-swap of the block, recomputed from the
 * fresh block on a conflict; deletes the block when it is left empty and unowned.
 */
async function releaseItemsInBlock(
  ctx: Context,
  block: IPAMBlock,
  items: readonly AddressRelease[],
  result: AddressReleaseResult,
): Promise<void> {
  const outcome = await updateBlock<BlockRelease>(ctx, block, (current) => {
    const decided: BlockRelease = { released: [], refused: [], gone: [] };
    const cidr = cidrOf(current);
    let next = current;
    for (const item of items) {
      const ip = parseIP(item.address);
      const ordinal = ip && blockHolds(current, ip) ? ordinalOf(cidr, ip) : undefined;
      // One ordinal per handle per block (invariant I4): releasing the handle here frees exactly it.
      if (ordinal === undefined || next.spec.allocations[ordinal]?.handle !== item.handle) {
        decided.gone.push(item);
        continue;
      }
      const done = releaseHandle(next, item.handle, item, ctx.clock());
      next = done.block;
      decided.released.push(...describedIn(current, done.released));
      decided.refused.push(...describedIn(current, done.refused));
    }
    return next === current ? { skip: decided } : { write: next, result: decided };
  });
  if ('gone' in outcome) {
    result.gone.push(...items);
    return;
  }
  result.released.push(...outcome.result.released);
  result.refused.push(...outcome.result.refused);
  result.gone.push(...outcome.result.gone);
  if (outcome.written && isEmpty(outcome.written) && outcome.written.spec.affinity === null)
    await deleteIfUnchanged(ctx, outcome.written);
}

/**
 * The released (or refused) ordinals as AllocatedAddress. An entry on a key that is no ordinal of
 * this block (a hand-corrupted block) is removed by the release but has no address to report: it
 * is left out, never thrown on.
 */
function describedIn(block: IPAMBlock, list: readonly ReleasedOrdinal[]): AllocatedAddress[] {
  return list.filter((r) => isOrdinalKey(block, r.key)).map((r) => describe(block, r.ordinal, r.allocation));
}

function blockHolds(block: IPAMBlock, ip: IP): boolean {
  const cidr = cidrFromBlockName(block.metadata.name);
  return cidr !== undefined && cidrContains(cidr, ip);
}

/** Every address `handle` holds (empty when none). Cost: 1 LIST. */
export async function findByHandle(
  ds: Datastore,
  handle: string,
  query: HandleQuery = {},
): Promise<AllocatedAddress[]> {
  const out: AllocatedAddress[] = [];
  for (const block of await listBlocksOf(ds, query.node)) {
    for (const [key, allocation] of Object.entries(block.spec.allocations)) {
      if (allocation.handle === handle && isOrdinalKey(block, key))
        out.push(describe(block, Number(key), allocation));
    }
  }
  return out;
}

/** Every allocation made for `node` (in its own blocks or borrowed). Cost: 1 LIST. */
export async function listNodeAllocations(ds: Datastore, node: string): Promise<AllocatedAddress[]> {
  const out: AllocatedAddress[] = [];
  for (const block of await listBlocksOf(ds, node)) {
    for (const [key, allocation] of Object.entries(block.spec.allocations)) {
      if (allocation.node === node && isOrdinalKey(block, key))
        out.push(describe(block, Number(key), allocation));
    }
  }
  return out;
}

/** True when `key` is a canonical decimal ordinal inside `block` (false on a corrupted block). */
function isOrdinalKey(block: IPAMBlock, key: string): boolean {
  return /^(0|[1-9][0-9]*)$/.test(key) && Number(key) < blockOrdinals(cidrOf(block));
}

/** The blocks that can hold `node`'s allocations (all blocks when no node is given). */
async function listBlocksOf(ds: Datastore, node: string | undefined): Promise<IPAMBlock[]> {
  return ds.blocks.list(node === undefined ? {} : { labelSelector: nodeBlocksSelector(node) });
}

/** Releases `handle` in `block` under CAS; returns how many allocations were released or refused. */
async function releaseInBlock(
  ctx: Context,
  block: IPAMBlock,
  handle: string,
  preconditions: ReleasePreconditions,
  result: ReleaseResult,
): Promise<number> {
  const outcome = await updateBlock<ReleaseResult>(ctx, block, (current) => {
    const done = releaseHandle(current, handle, preconditions, ctx.clock());
    const refused = describedIn(current, done.refused);
    const released = describedIn(current, done.released);
    return done.released.length === 0
      ? { skip: { released, refused } }
      : { write: done.block, result: { released, refused } };
  });
  if ('gone' in outcome) return 0;
  result.released.push(...outcome.result.released);
  result.refused.push(...outcome.result.refused);
  if (outcome.written && isEmpty(outcome.written) && outcome.written.spec.affinity === null)
    await deleteIfUnchanged(ctx, outcome.written);
  return outcome.result.released.length + outcome.result.refused.length;
}

/** Deletes a block only if nobody wrote it since `block` was read. */
export async function deleteIfUnchanged(ctx: Context, block: IPAMBlock): Promise<boolean> {
  try {
    await ctx.ds.blocks.delete(block.metadata.name, {
      resourceVersion: block.metadata.resourceVersion,
      uid: block.metadata.uid,
    });
    ctx.stats.blocksReleased += 1;
    return true;
  } catch (error) {
    if (isNotFound(error)) return false;
    if (isConflict(error)) {
      ctx.stats.conflicts += 1;
      return false;
    }
    throw error;
  }
}
