/**
 * The block trust step (docs/design-controller.md §1): core's classifyBlocks over the watched
 * blocks and pools — the verdict that decides which blocks get routes (planIPAMNodes) and that
 * each agent's allocator reaches for its own blocks — and on each block the `Trusted` condition
 * through the status subresource, written only when its status, reason or message changes (never
 * because an allocation bumped the generation). A trusted block that core's freezesOf finds frozen
 * (core/block/frozen.ts: routed and releasable, never allocated from) is a separate verdict:
 * `True`, reason `Frozen`, the freeze reasons and their evidence in the message. A trusted,
 * unfrozen block that never carried the condition gets none: thousands of status writes at the
 * first pass would say nothing. An Event on each transition (ignored, frozen, trusted again); the
 * gauges `blockipam_ipam_blocks_ignored{reason}` and `blockipam_ipam_blocks_frozen{reason}` on
 * every pass.
 */
import {
  boundMessage,
  classifyBlocks,
  DISTRUST_REASONS,
  FREEZE_REASONS,
  freezesOf,
  isConflict,
  isNotFound,
  rfc3339,
} from 'blockipam/core';
import type { Condition, DistrustReason, Freeze, IPAMBlock } from 'blockipam/core';
import type { PassContext } from '../pass.ts';

const TRUSTED = 'Trusted';

/**
 * The condition reason of a frozen block: one reason for the four freeze reasons (the set of
 * condition reasons stays small; the message names each freeze reason, the gauge counts them).
 */
const FROZEN = 'Frozen';

/** The condition reason of each distrust reason (CamelCase, as Kubernetes reasons are). */
const TRUST_REASONS: Readonly<Record<DistrustReason, string>> = {
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
  /** Trusted but frozen blocks (routed and releasable, not allocated from), by name. */
  frozen: string[];
}

export async function blockTrustStep(ctx: PassContext): Promise<BlockTrustStep> {
  const { trusted, ignored } = classifyBlocks(ctx.view.blocks(), ctx.view.pools());
  const counts = new Map<string, number>(DISTRUST_REASONS.map((reason) => [reason, 0]));
  for (const { reason } of ignored) counts.set(reason, (counts.get(reason) ?? 0) + 1);
  for (const [reason, value] of counts) ctx.metrics?.blocksIgnored.set({ reason }, value);
  const frozen = trusted.flatMap((block) => {
    const freezes = freezesOf(block);
    return freezes.length > 0 ? [{ block, freezes }] : [];
  });
  countFrozen(ctx, frozen);
  const isFrozen = new Set(frozen.map((f) => f.block));
  const result: BlockTrustStep = {
    written: [],
    ignored: ignored.map((i) => i.block.metadata.name),
    frozen: frozen.map((f) => f.block.metadata.name),
  };
  const wanted = [
    ...ignored.map((i) => ({
      block: i.block,
      condition: { status: 'False' as const, reason: TRUST_REASONS[i.reason], message: i.message },
    })),
    ...frozen.map(({ block, freezes }) => ({
      block,
      condition: { status: 'True' as const, reason: FROZEN, message: frozenMessage(freezes) },
    })),
    ...trusted
      .filter((block) => !isFrozen.has(block) && trustedOf(block) !== undefined)
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
    // Same verdict (ignored, frozen or allocated from), new evidence: no Event.
    if (before?.status === condition.status && (before.reason === FROZEN) === (condition.reason === FROZEN))
      continue;
    ctx.log.info('IPAMBlock Trusted condition changed', { block: block.metadata.name, ...condition });
    ctx.events.emit({
      kind: 'IPAMBlock',
      name: block.metadata.name,
      ...(block.metadata.uid ? { uid: block.metadata.uid } : {}),
      ...transitionEvent(condition),
      action: 'Classify',
    });
  }
  return result;
}

/**
 * The condition message of a frozen block: what still works, then each freeze with its evidence,
 * bounded by core's boundMessage (4 KiB: a block of 4,096 allocations with unsafe sequences would
 * otherwise name each one).
 */
function frozenMessage(freezes: readonly Freeze[]): string {
  const why = freezes.map((f) => `${f.reason}: ${f.message}`).join('; ');
  return boundMessage(`routed and releasable, not allocated from: ${why}`);
}

/**
 * `blockipam_ipam_blocks_frozen{reason}`: frozen blocks by their first freeze reason (core's
 * order), so the series add up to the number of frozen blocks; every reason is set, 0 included.
 */
function countFrozen(ctx: PassContext, frozen: readonly { freezes: readonly Freeze[] }[]): void {
  const counts = new Map<string, number>(FREEZE_REASONS.map((reason) => [reason, 0]));
  for (const { freezes } of frozen) {
    const first = freezes[0]!.reason;
    counts.set(first, (counts.get(first) ?? 0) + 1);
  }
  for (const [reason, value] of counts) ctx.metrics?.blocksFrozen.set({ reason }, value);
}

/** The Event of a verdict change: ignored (Warning), frozen (Warning) or trusted again (Normal). */
function transitionEvent(condition: { status: 'True' | 'False'; reason: string; message: string }): {
  type: 'Normal' | 'Warning';
  reason: string;
  note: string;
} {
  if (condition.status === 'False')
    return {
      type: 'Warning',
      reason: `BlockIgnored${condition.reason}`,
      note: `ignored by routes and allocation: ${condition.message}`,
    };
  if (condition.reason === FROZEN) return { type: 'Warning', reason: 'BlockFrozen', note: condition.message };
  return {
    type: 'Normal',
    reason: 'BlockTrusted',
    note: 'the block is trusted again: routed and allocated from',
  };
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
