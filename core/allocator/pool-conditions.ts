/**
 * The one rule from a pool's figures to its conditions (docs/design-controller.md §Pool
 * conditions), pure: the cluster controller writes them into IPPool.status, ipamctl can show
 * them from the same figures. Five conditions, each in metav1.Condition's shape:
 *
 * | type            | True when                                                                 |
 * | --------------- | ------------------------------------------------------------------------- |
 * | Ready           | Allocatable and not Exhausted                                             |
 * | Allocatable     | not being deleted, not shadowed by an older overlapping pool, not disabled |
 * | NearlyExhausted | allocatable and (used ≥ nearlyExhaustedPercent of capacity, or no unclaimed block left) |
 * | Exhausted       | allocatable and no free address (every assignable one allocated or reserved) |
 * | Disabled        | spec.disabled                                                             |
 *
 * "Used" is capacity − free: allocated and reserved addresses. A pool that is not allocatable is
 * neither NearlyExhausted nor Exhausted (False, with the Allocatable reason): nothing is
 * allocated from it, and an alert on it would say nothing an operator can act on.
 */
import type { ConditionVerdict } from '../conditions.ts';
import type { IPPool } from '../resources.ts';
import type { PoolUtilization } from './utilization.ts';

export const POOL_CONDITIONS = ['Ready', 'Allocatable', 'NearlyExhausted', 'Exhausted', 'Disabled'] as const;
type PoolConditionType = (typeof POOL_CONDITIONS)[number];

/** One word for the `State` column: the first that holds, in this order. */
type PoolState = 'Terminating' | 'CIDROverlap' | 'Disabled' | 'Exhausted' | 'NearlyExhausted' | 'Ready';

/** What the rule reads. */
export interface PoolConditionInput {
  /** spec.disabled and metadata.deletionTimestamp are read. */
  readonly pool: IPPool;
  readonly usage: Pick<PoolUtilization, 'capacity' | 'free' | 'unclaimedBlocks' | 'freeInClaimedBlocks'>;
  /** The older pool this one overlaps (core's usablePools `shadowed[].by`), if any. */
  readonly shadowedBy?: string;
  /** IPAMConfig poolNearlyExhaustedPercent, 1–100. */
  readonly nearlyExhaustedPercent: number;
}

/** One pool condition as the rule decides it (no time, no generation). */
type Verdict = ConditionVerdict & { type: PoolConditionType };

export interface PoolVerdict {
  readonly state: PoolState;
  /** In POOL_CONDITIONS order, without times (core's setConditions adds them). */
  readonly conditions: readonly Verdict[];
}

/** The pool's conditions and state from its figures. */
export function poolConditions(input: PoolConditionInput): PoolVerdict {
  const { pool, usage, nearlyExhaustedPercent: threshold } = input;
  const allocatable = allocatableOf(pool, input.shadowedBy);
  const used = usage.capacity - usage.free;
  const percent = usage.capacity > 0n ? (used * 100n) / usage.capacity : 100n;
  const exhausted = usage.free <= 0n;
  const overThreshold = used * 100n >= BigInt(threshold) * usage.capacity;
  const noUnclaimed = usage.unclaimedBlocks <= 0n;
  const figures = `${used} of ${usage.capacity} addresses allocated or reserved (${percent}%)`;
  const notJudged = (type: PoolConditionType): Verdict => ({
    type,
    status: 'False',
    reason: allocatable.reason ?? 'NotAllocatable',
    message: `not judged: ${allocatable.message ?? ''}`,
  });
  const exhaustedC: Verdict = exhausted
    ? { type: 'Exhausted', status: 'True', reason: 'NoFreeAddresses', message: `${figures}: no free address` }
    : {
        type: 'Exhausted',
        status: 'False',
        reason: 'FreeAddresses',
        message: `${usage.free} free; ${figures}`,
      };
  const nearlyC: Verdict = overThreshold
    ? {
        type: 'NearlyExhausted',
        status: 'True',
        reason: 'AboveThreshold',
        message: `${figures}, at or above the threshold of ${threshold}% (IPAMConfig poolNearlyExhaustedPercent); ${usage.free} free`,
      }
    : noUnclaimed
      ? {
          type: 'NearlyExhausted',
          status: 'True',
          reason: 'NoUnclaimedBlocks',
          message: `every block of the pool is claimed: ${usage.freeInClaimedBlocks} free addresses remain in claimed blocks, for their nodes or by borrowing; a node that needs a new block gets none`,
        }
      : {
          type: 'NearlyExhausted',
          status: 'False',
          reason: 'BelowThreshold',
          message: `${figures}, below the threshold of ${threshold}%; ${usage.unclaimedBlocks} unclaimed blocks`,
        };
  const ready: Verdict =
    allocatable.status !== 'True'
      ? { ...allocatable, type: 'Ready' }
      : exhausted
        ? { type: 'Ready', status: 'False', reason: 'Exhausted', message: exhaustedC.message ?? '' }
        : {
            type: 'Ready',
            status: 'True',
            reason: 'OK',
            message: `addresses are allocated from this pool; ${usage.free} free`,
          };
  const disabled: Verdict = pool.spec.disabled
    ? {
        type: 'Disabled',
        status: 'True',
        reason: 'PoolDisabled',
        message: 'spec.disabled is true: no new allocations',
      }
    : { type: 'Disabled', status: 'False', reason: 'Enabled', message: 'spec.disabled is false' };
  const judged = allocatable.status === 'True';
  const conditions = [
    ready,
    allocatable,
    judged ? nearlyC : notJudged('NearlyExhausted'),
    judged ? exhaustedC : notJudged('Exhausted'),
    disabled,
  ];
  return {
    state: stateOf(allocatable, judged && exhausted, judged && (overThreshold || noUnclaimed)),
    conditions,
  };
}

/** Allocatable with Calico's reasons: OK, Terminating, CIDROverlap, PoolDisabled. */
function allocatableOf(pool: IPPool, shadowedBy: string | undefined): Verdict {
  if (pool.metadata.deletionTimestamp)
    return {
      type: 'Allocatable',
      status: 'False',
      reason: 'Terminating',
      message: 'the pool is being deleted: no new allocations',
    };
  if (shadowedBy !== undefined)
    return {
      type: 'Allocatable',
      status: 'False',
      reason: 'CIDROverlap',
      message: `${pool.spec.cidr} overlaps the older IP pool "${shadowedBy}": no allocations from this pool`,
    };
  if (pool.spec.disabled)
    return { type: 'Allocatable', status: 'False', reason: 'PoolDisabled', message: 'spec.disabled is true' };
  return {
    type: 'Allocatable',
    status: 'True',
    reason: 'OK',
    message: 'addresses are allocated from this pool',
  };
}

function stateOf(allocatable: Verdict, exhausted: boolean, nearly: boolean): PoolState {
  if (allocatable.reason === 'Terminating') return 'Terminating';
  if (allocatable.reason === 'CIDROverlap') return 'CIDROverlap';
  if (allocatable.reason === 'PoolDisabled') return 'Disabled';
  if (exhausted) return 'Exhausted';
  return nearly ? 'NearlyExhausted' : 'Ready';
}
