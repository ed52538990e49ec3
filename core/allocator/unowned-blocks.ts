/**
 * Releasing unowned empty blocks (the cluster controller's safety net). The
 * release path deletes a block left empty and unowned at once, but that delete can lose to a
 * concurrent write, and a deleted node's blocks become unowned while still holding addresses;
 * what stays behind empty is released here after max(emptyBlockReleaseSeconds,
 * ipCooldownSeconds), as the node agent releases its own. The caller passes the blocks as it
 * read them (a watch cache): the delete carries their resourceVersion + uid, so a block written
 * since — an allocation, a claim — is never deleted, and no GET is needed.
 */
import { emptySinceMs } from '../block/block.ts';
import type { IPAMSettings } from '../config.ts';
import type { Datastore } from '../datastore/datastore.ts';
import type { IPAMBlock } from '../resources.ts';
import { contextOf } from './context.ts';
import type { AllocatorOptions } from './context.ts';
import { deleteIfUnchanged } from './release.ts';

/** Result of one release pass. */
export interface EmptyBlockRelease {
  /** Names of the blocks deleted. */
  released: string[];
  /** Empty, old enough, but lost to a concurrent write. */
  kept: string[];
}

/**
 * Deletes those of `blocks` that are unowned and have stayed empty long enough.
 * Cost: 1 DELETE per qualifying block. `kept`: qualifying blocks that changed meanwhile.
 */
export async function releaseUnownedEmptyBlocks(
  ds: Datastore,
  blocks: readonly IPAMBlock[],
  settings: IPAMSettings,
  options: AllocatorOptions = {},
): Promise<EmptyBlockRelease> {
  const ctx = contextOf(ds, options);
  const minAgeMs = Math.max(settings.emptyBlockReleaseSeconds, settings.ipCooldownSeconds) * 1000;
  const result: EmptyBlockRelease = { released: [], kept: [] };
  for (const block of blocks) {
    if (block.spec.affinity !== null) continue;
    const since = emptySinceMs(block, ctx.clock());
    if (since === undefined || ctx.clock() - since < minAgeMs) continue;
    ((await deleteIfUnchanged(ctx, block)) ? result.released : result.kept).push(block.metadata.name);
  }
  return result;
}
