/**
 * Empty-block release with the anti-ping-pong rule (docs/design-core.md §2, Calico's releaseUnusedBlocks):
 * an empty block goes only after staying empty for max(emptyBlockReleaseSeconds,
 * ipCooldownSeconds) — its dates read with frozen.ts trustedTimeMs, so a future date cannot keep
 * it — and a node always keeps at least one unfrozen block of each IP family (a
 * dual-stack node's next pod needs both; keyed by (node, family), so the v6 block is not the
 * one that ping-pongs). The delete carries the resourceVersion + uid read, so a block that got an allocation meanwhile survives (no
 * compare-and-delete is needed beyond Kubernetes' delete preconditions).
 */
import { cidrOf, emptySinceMs } from '../block/block.ts';
import { isAllocatable } from '../block/frozen.ts';
import { affineSelector } from '../block/labels.ts';
import { IPAM_CONFIG_NAME, settingsOf } from '../config.ts';
import type { IPAMSettings } from '../config.ts';
import type { Datastore } from '../datastore/datastore.ts';
import type { IPAMBlock } from '../resources.ts';
import { contextOf } from './context.ts';
import type { AllocatorOptions } from './context.ts';
import { deleteIfUnchanged } from './release.ts';

/** Result of one pass. */
export interface EmptyBlockRelease {
  /** Names of the blocks deleted. */
  released: string[];
  /** Empty, old enough, but lost to a concurrent write (or kept as the node's last block). */
  kept: string[];
}

/**
 * One pass over the blocks of `node` (or of every node): deletes the empty blocks that qualify.
 * @param query.settings defaults to IPAMConfig "default" (1 GET)
 */
export async function releaseEmptyBlocks(
  ds: Datastore,
  query: { node?: string; settings?: IPAMSettings } = {},
  options: AllocatorOptions = {},
): Promise<EmptyBlockRelease> {
  const ctx = contextOf(ds, options);
  const settings = query.settings ?? settingsOf(await ctx.ds.configs.get(IPAM_CONFIG_NAME));
  const blocks = await ctx.ds.blocks.list(
    query.node === undefined ? {} : { labelSelector: affineSelector(query.node) },
  );
  const minAgeMs = Math.max(settings.emptyBlockReleaseSeconds, settings.ipCooldownSeconds) * 1000;
  const result: EmptyBlockRelease = { released: [], kept: [] };
  for (const group of byAffinityAndFamily(blocks).values()) {
    const idle = group.filter((block) => {
      const since = emptySinceMs(block, ctx.clock());
      return since !== undefined && ctx.clock() - since >= minAgeMs;
    });
    // Keep one unfrozen block per (node, family): if every unfrozen block of the node in the
    // family is idle, the first by name stays — a deterministic choice, so concurrent passes agree
    // on it. A frozen block (core/block/frozen.ts) is never the one kept: it is no room.
    const owned = group[0]?.spec.affinity !== null;
    const allocatable = idle.filter(isAllocatable);
    const keep =
      owned && allocatable.length > 0 && allocatable.length === group.filter(isAllocatable).length
        ? allocatable[0]
        : undefined;
    if (keep) {
      idle.splice(idle.indexOf(keep), 1);
      result.kept.push(keep.metadata.name);
    }
    for (const block of idle)
      ((await deleteIfUnchanged(ctx, block)) ? result.released : result.kept).push(block.metadata.name);
  }
  return result;
}

/**
 * Blocks grouped by (affinity, IP family) — affinity null = unowned — each group sorted by name.
 * @returns a map keyed by JSON `[affinity, family]`
 */
function byAffinityAndFamily(blocks: readonly IPAMBlock[]): Map<string, IPAMBlock[]> {
  const groups = new Map<string, IPAMBlock[]>();
  for (const block of [...blocks].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))) {
    const key = JSON.stringify([block.spec.affinity, cidrOf(block).family]);
    groups.set(key, [...(groups.get(key) ?? []), block]);
  }
  return groups;
}
