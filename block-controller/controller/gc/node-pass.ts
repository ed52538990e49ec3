/**
 * The deleted-nodes step (Calico's releaseNodes): a node that owns blocks but no longer exists
 * is first quarantined (gc/gone-nodes.ts: `nodeGoneGraceMs` from when the controller first saw it
 * gone, its blocks affine and its allocations held); past that it loses its blocks once none of
 * its allocations is left anywhere — the leak step releases those (`node-gone`) unless a live pod
 * still holds the address, and then the node waits. Before acting, the node is read fresh (GET:
 * 404 required). core's releaseNodeBlocks deletes the empty blocks and makes the others (other
 * nodes' borrowed addresses) unowned.
 * Also: unowned blocks left empty, deleted after max(emptyBlockReleaseSeconds, ipCooldownSeconds).
 */
import { releaseNodeBlocks, releaseUnownedEmptyBlocks, settingsOf } from 'blockipam/core';
import type { PassContext } from '../pass.ts';
import { goneNodeNames } from './gone-nodes.ts';
import type { GoneNodes } from './gone-nodes.ts';
import type { LeakStep } from './leak-pass.ts';

/**
 * Starts and ends quarantines: the nodes the watched blocks name that are not watched are
 * observed gone (an Event `NodeQuarantined` on the Node for each new one, a log line for each
 * back). `graceMs` 0: no quarantine (released at once, as before the quarantine existed).
 * @returns whether `node`'s quarantine still holds now
 */
export function quarantineStep(
  ctx: PassContext,
  gone: GoneNodes,
  graceMs: number,
): (node: string) => boolean {
  const nowMs = ctx.clock();
  const { fresh, back } = gone.observe(goneNodeNames(ctx.view.blocks(), ctx.view.nodeNames()), nowMs);
  for (const node of back) ctx.log.info('node back, or no longer named: its quarantine ended', { node });
  if (graceMs > 0)
    for (const node of fresh) {
      ctx.log.info("deleted node's blocks quarantined", { node, graceSeconds: graceMs / 1000 });
      ctx.events.emit({
        kind: 'Node',
        name: node,
        type: 'Normal',
        reason: 'NodeQuarantined',
        action: 'Quarantine',
        note: `node ${node} no longer exists: its blocks stay affine to it and its addresses allocated for ${graceMs / 1000} s (its sandboxes may still run); a Node of the name back by then keeps them`,
      });
    }
  return (node) => gone.quarantined(node, nowMs, graceMs);
}

export interface NodeStep {
  /** Deleted nodes whose blocks were released. */
  nodes: string[];
  /** Deleted nodes still holding allocations (kept until those go). */
  waiting: string[];
  /** Deleted nodes in quarantine (nothing of theirs released yet). */
  quarantined: string[];
  deletedBlocks: string[];
  unownedBlocks: string[];
}

/** @param quarantined whether a deleted node is still in quarantine ({@link quarantineStep}) */
export async function deletedNodeStep(
  ctx: PassContext,
  leaks: LeakStep,
  quarantined: (node: string) => boolean,
): Promise<NodeStep> {
  const result: NodeStep = { nodes: [], waiting: [], quarantined: [], deletedBlocks: [], unownedBlocks: [] };
  const live = new Set(ctx.view.nodeNames());
  const gone = new Set(
    ctx.view
      .blocks()
      .map((b) => b.spec.affinity)
      .filter((n): n is string => n !== null && !live.has(n)),
  );
  const releasedPerNode = new Map<string, number>();
  for (const c of leaks.reclaim.released)
    releasedPerNode.set(c.allocation.node, (releasedPerNode.get(c.allocation.node) ?? 0) + 1);
  for (const node of gone) {
    if (quarantined(node)) {
      result.quarantined.push(node);
      continue;
    }
    const left = (leaks.scan.perNode.get(node) ?? 0) - (releasedPerNode.get(node) ?? 0);
    if (left > 0) {
      result.waiting.push(node);
      continue;
    }
    if (!ctx.mayWrite()) break;
    try {
      if (await ctx.ds.getNode(node)) continue; // the watch was behind: the node exists
      const released = await releaseNodeBlocks(ctx.ds, node, ctx.allocator);
      result.nodes.push(node);
      result.deletedBlocks.push(...released.deleted);
      result.unownedBlocks.push(...released.unowned);
      ctx.log.info("deleted node's blocks released", {
        node,
        deleted: released.deleted,
        unowned: released.unowned,
      });
      ctx.events.emit({
        kind: 'Node',
        name: node,
        type: 'Normal',
        reason: 'NodeBlocksReleased',
        action: 'Release',
        note: `node ${node} no longer exists: deleted ${released.deleted.length} empty block(s)${released.unowned.length ? `, made ${released.unowned.length} block(s) holding other nodes' addresses unowned (${released.unowned.join(', ')})` : ''}`,
      });
    } catch (error) {
      ctx.onApiError?.('release-node-blocks', error);
      ctx.log.warn("releasing a deleted node's blocks failed; retried next pass", {
        node,
        error: String(error),
      });
    }
  }
  return result;
}

/** Unowned empty blocks older than the release time are deleted (preconditions: as watched). */
export async function unownedBlockStep(ctx: PassContext): Promise<string[]> {
  if (!ctx.mayWrite()) return [];
  const settings = settingsOf(ctx.view.config());
  const unowned = ctx.view.blocks().filter((b) => b.spec.affinity === null);
  if (unowned.length === 0) return [];
  try {
    const { released } = await releaseUnownedEmptyBlocks(ctx.ds, unowned, settings, ctx.allocator);
    for (const name of released) {
      ctx.log.info('unowned empty block released', { block: name });
      ctx.events.emit({
        kind: 'IPAMBlock',
        name,
        type: 'Normal',
        reason: 'EmptyBlockReleased',
        action: 'Delete',
        note: `unowned and empty for at least ${Math.max(settings.emptyBlockReleaseSeconds, settings.ipCooldownSeconds)} s: deleted`,
      });
    }
    return released;
  } catch (error) {
    ctx.onApiError?.('release-unowned-blocks', error);
    ctx.log.warn('releasing unowned empty blocks failed; retried next pass', { error: String(error) });
    return [];
  }
}
