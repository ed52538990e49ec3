/**
 * Kubernetes conditions (metav1.Condition) kept the way apimachinery's meta.SetStatusCondition
 * keeps them: one entry per type, `lastTransitionTime` moved only when the status changes.
 */
import type { Condition } from './resources.ts';

/** A condition as a rule decides it: everything but the time and the generation. */
export type ConditionVerdict = Omit<Condition, 'lastTransitionTime' | 'observedGeneration'>;

/**
 * The stored `previous` conditions with each of `next` set: a type whose status did not change
 * keeps its `lastTransitionTime` (reason and message may change), a new or changed one gets
 * `nowIso`; every one of `next` gets `generation` as `observedGeneration` when known. Types not
 * in `next` stay as stored, first, in their order; then `next` in its order.
 * @param nowIso RFC 3339 (core's rfc3339)
 * @param generation metadata.generation of the object judged; undefined = not recorded
 */
export function setConditions(
  previous: readonly Condition[] | undefined,
  next: readonly ConditionVerdict[],
  nowIso: string,
  generation?: number,
): Condition[] {
  const types = new Set(next.map((c) => c.type));
  const others = (previous ?? []).filter((c) => !types.has(c.type));
  return [
    ...others,
    ...next.map((verdict) => {
      const before = previous?.find((c) => c.type === verdict.type);
      const since = before?.status === verdict.status ? before.lastTransitionTime : undefined;
      return {
        ...verdict,
        lastTransitionTime: since ?? nowIso,
        ...(generation === undefined ? {} : { observedGeneration: generation }),
      };
    }),
  ];
}

/** The condition of `type` in `conditions`, if any. */
export function conditionOf(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/**
 * The types whose status became True from anything else (absent, False, Unknown) between
 * `before` and `after`, in `after`'s order.
 */
export function becameTrue(
  before: readonly Condition[] | undefined,
  after: readonly Condition[] | undefined,
): string[] {
  return (after ?? [])
    .filter((c) => c.status === 'True' && conditionOf(before, c.type)?.status !== 'True')
    .map((c) => c.type);
}
