/**
 * The podCIDR blocks step (docs/design-controller.md §1, step 0): core's planPodCIDRBlocks
 * over the watched Nodes, pools and blocks — every tile of a node's podCIDR inside a pool with
 * `spec.podCIDRBlocks` becomes that node's block. A missing block is created affine to the node
 * (as core's claim creates it; AlreadyExists: someone else did, the next pass judges it); an
 * unowned one is given to the node (compare-and-swap on the watched resourceVersion; a 409: the
 * next pass). A Normal Event `PodCIDRBlockCreated` / `PodCIDRBlockAssigned` on the block, a
 * Warning `PodCIDRBlockConflict` on the Node once per conflict and controller run (a tile affine to
 * another node, a podCIDR cut into too many blocks). Nothing here deletes: a deleted node's
 * blocks go through the deleted-node step like any other.
 */
import {
  isAlreadyExists,
  isConflict,
  isNotFound,
  planPodCIDRBlocks,
  podCIDRBlockGiven,
} from 'blockipam/core';
import type { IPAMBlock } from 'blockipam/core';
import type { PassContext } from '../pass.ts';

export interface PodCIDRBlockStep {
  /** Blocks created this pass, by name. */
  created: string[];
  /** Unowned blocks given to their podCIDR's node this pass, by name. */
  assigned: string[];
  /** Conflicts, as messages. */
  conflicts: string[];
}

/**
 * Runs the step. `reported` keeps the conflicts already announced (one Event each per run).
 */
export async function podCIDRBlockStep(ctx: PassContext, reported: Set<string>): Promise<PodCIDRBlockStep> {
  const result: PodCIDRBlockStep = { created: [], assigned: [], conflicts: [] };
  const pools = ctx.view.pools();
  if (!pools.some((p) => p.spec.podCIDRBlocks === true)) return result;
  const plan = planPodCIDRBlocks({
    nodes: ctx.view.nodes(),
    pools,
    blocks: ctx.view.blocks(),
    nowMs: ctx.clock(),
  });
  for (const conflict of plan.conflicts) {
    result.conflicts.push(conflict.message);
    if (reported.has(conflict.message)) continue;
    reported.add(conflict.message);
    ctx.log.warn('podCIDR block conflict', {
      node: conflict.node,
      cidr: conflict.cidr,
      message: conflict.message,
    });
    ctx.events.emit({
      kind: 'Node',
      name: conflict.node,
      type: 'Warning',
      reason: 'PodCIDRBlockConflict',
      action: 'Reserve',
      note: conflict.message,
    });
  }
  for (const block of plan.create) {
    if (!ctx.mayWrite()) return result;
    if (await write(ctx, 'create', block, () => ctx.ds.blocks.create(block))) {
      result.created.push(block.metadata.name);
      announce(ctx, block, node(block), 'PodCIDRBlockCreated', 'created affine to node');
    }
  }
  for (const { block, node } of plan.assign) {
    if (!ctx.mayWrite()) return result;
    const given = podCIDRBlockGiven(block, node, ctx.clock());
    if (await write(ctx, 'assign', block, () => ctx.ds.blocks.update(given))) {
      result.assigned.push(block.metadata.name);
      announce(ctx, block, node, 'PodCIDRBlockAssigned', 'unowned, given to node');
    }
  }
  return result;
}

/** Runs one write; AlreadyExists, Conflict and NotFound mean the next pass judges again. */
async function write(
  ctx: PassContext,
  op: 'create' | 'assign',
  block: IPAMBlock,
  send: () => Promise<unknown>,
): Promise<boolean> {
  try {
    await send();
    return true;
  } catch (error) {
    if (isAlreadyExists(error) || isConflict(error) || isNotFound(error)) return false;
    ctx.onApiError?.(`podcidr-block-${op}`, error);
    ctx.log.warn('podCIDR block not written; retried next pass', {
      block: block.metadata.name,
      op,
      error: String(error),
    });
    return false;
  }
}

const node = (block: IPAMBlock): string => block.spec.affinity ?? '';

function announce(ctx: PassContext, block: IPAMBlock, owner: string, reason: string, what: string): void {
  const note = `${what} ${owner}: the block is (part of) its podCIDR`;
  ctx.log.info('podCIDR block', { block: block.metadata.name, reason, node: owner });
  ctx.events.emit({
    kind: 'IPAMBlock',
    name: block.metadata.name,
    ...(block.metadata.uid ? { uid: block.metadata.uid } : {}),
    type: 'Normal',
    reason,
    action: 'Reserve',
    note,
  });
}
