/**
 * The block trust step (docs/design-controller.md §1): core's classifyBlocks over the watched
 * blocks and pools — the verdict that decides which blocks get routes (planIPAMNodes) and that
 * each agent's allocator reaches for its own blocks — and on each block the `Trusted` condition through the status subresource, written only when its
 * status, reason or message changes (never because an allocation bumped the generation). A
 * trusted block that never carried the condition gets none: thousands of status writes at the
 * first pass would say nothing. An Event on each transition (ignored, trusted again); the gauge
 * `blockipam_ipam_blocks_ignored{reason}` on every pass.
 */
import { classifyBlocks, DISTRUST_REASONS, isConflict, isNotFound, rfc3339 } from 'blockipam/core';
import type { Condition, DistrustReason, IPAMBlock } from 'blockipam/core';
import type { PassContext } from '../pass.ts';

export const TRUSTED = 'Trusted';

/** The condition reason of each distrust reason (CamelCase, as Kubernetes reasons are). */
export const TRUST_REASONS: Readonly<Record<DistrustReason, string>> = {
  'invalid-cidr': 'InvalidCIDR',
  'outside-pools': 'OutsidePools',
  'pool-mismatch': 'PoolMismatch',
  'size-mismatch': 'SizeMismatch',
  'labels-mismatch': 'LabelsMismatch',
  overlap: 'Overlap',
};

export interface BlockTrustStep {
  /** Blocks whose Trusted condition was written this pass. */
  written: string[];
  /** Ignored blocks, by name. */
  ignored: string[];
}

export async function blockTrustStep(ctx: PassContext): Promise<BlockTrustStep> {
  const { trusted, ignored } = classifyBlocks(ctx.view.blocks(), ctx.view.pools());
  const counts = new Map<string, number>(DISTRUST_REASONS.map((reason) => [reason, 0]));
  for (const { reason } of ignored) counts.set(reason, (counts.get(reason) ?? 0) + 1);
  for (const [reason, value] of counts) ctx.metrics?.blocksIgnored.set({ reason }, value);
  const result: BlockTrustStep = { written: [], ignored: ignored.map((i) => i.block.metadata.name) };
  const wanted = [
    ...ignored.map((i) => ({
      block: i.block,
      condition: { status: 'False' as const, reason: TRUST_REASONS[i.reason], message: i.message },
    })),
    ...trusted
      .filter((block) => trustedOf(block) !== undefined)
      .map((block) => ({
        block,
        condition: { status: 'True' as const, reason: 'Trusted', message: 'routed and allocated from' },
      })),
  ];
  for (const { block, condition } of wanted) {
    const before = trustedOf(block);
    if (
      before?.status === condition.status &&
      before.reason === condition.reason &&
      before.message === condition.message
    )
      continue;
    if (!ctx.blockStatus || !ctx.mayWrite()) break;
    if (await writeCondition(ctx, block, condition)) result.written.push(block.metadata.name);
    else continue;
    if (before?.status === condition.status) continue; // same verdict, new evidence: no Event
    ctx.log.info('IPAMBlock Trusted condition changed', { block: block.metadata.name, ...condition });
    ctx.events.emit({
      kind: 'IPAMBlock',
      name: block.metadata.name,
      ...(block.metadata.uid ? { uid: block.metadata.uid } : {}),
      type: condition.status === 'True' ? 'Normal' : 'Warning',
      reason: condition.status === 'True' ? 'BlockTrusted' : `BlockIgnored${condition.reason}`,
      action: 'Classify',
      note:
        condition.status === 'True'
          ? 'the block is trusted again: routed and allocated from'
          : `ignored by routes and allocation: ${condition.message}`,
    });
  }
  return result;
}

/** The block's Trusted condition, if any. */
function trustedOf(block: IPAMBlock): Condition | undefined {
  return block.status?.conditions?.find((c) => c.type === TRUSTED);
}

/**
 * Writes the condition (compare-and-swap on the watched resourceVersion: a 409 means the block
 * changed, and the next pass judges the new one). `lastTransitionTime` moves only with the status.
 * @returns true when written
 */
async function writeCondition(
  ctx: PassContext,
  block: IPAMBlock,
  condition: Pick<Condition, 'status' | 'reason' | 'message'>,
): Promise<boolean> {
  const before = trustedOf(block);
  const since = before?.status === condition.status ? before.lastTransitionTime : undefined;
  const next: Condition = {
    type: TRUSTED,
    ...condition,
    lastTransitionTime: since ?? rfc3339(ctx.clock()),
    ...(block.metadata.generation === undefined ? {} : { observedGeneration: block.metadata.generation }),
  };
  const others = (block.status?.conditions ?? []).filter((c) => c.type !== TRUSTED);
  try {
    await ctx.blockStatus?.({ ...block, status: { ...block.status, conditions: [...others, next] } });
    return true;
  } catch (error) {
    if (isConflict(error) || isNotFound(error)) return false;
    ctx.onApiError?.('block-status', error);
    ctx.log.warn('IPAMBlock status not written; retried next pass', {
      block: block.metadata.name,
      error: String(error),
    });
    return false;
  }
}
