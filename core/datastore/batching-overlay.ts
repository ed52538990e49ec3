/**
 * Reads of the batching decorator (batching.ts): a LIST as if the busy blocks' speculative states
 * were written — each busy block replaced by its state, added when the state's labels match and
 * the server's did not, dropped when they no longer match. Pure.
 */
import { matchesSelector } from '../selector.ts';
import type { IPAMBlock, LabelSelector, ObjectMeta } from '../resources.ts';

/** `listed` (sorted by name) with `states` laid over it, still sorted by name. */
export function overlayList(
  listed: readonly IPAMBlock[],
  states: readonly IPAMBlock[],
  selector: LabelSelector | undefined,
): IPAMBlock[] {
  return overlay(listed, states, selector, (b) => b.metadata);
}

/** {@link overlayList} for a metadata LIST. */
export function overlayMetadata(
  listed: readonly ObjectMeta[],
  states: readonly IPAMBlock[],
  selector: LabelSelector | undefined,
): ObjectMeta[] {
  return overlay(
    listed,
    states.map((b) => b.metadata),
    selector,
    (m) => m,
  );
}

/**
 * One page of a paged LIST: only the blocks the page holds are replaced (or dropped when their
 * state no longer matches); a busy block is never added, since which page it belongs to is the
 * server's to decide.
 */
export function overlayPage(
  items: readonly IPAMBlock[],
  states: readonly IPAMBlock[],
  selector: LabelSelector | undefined,
): IPAMBlock[] {
  const byName = new Map(states.map((s) => [s.metadata.name, s]));
  return items.flatMap((item) => {
    const state = byName.get(item.metadata.name);
    if (!state) return [item];
    return matchesSelector(selector, state.metadata.labels) ? [state] : [];
  });
}

function overlay<T>(
  listed: readonly T[],
  states: readonly T[],
  selector: LabelSelector | undefined,
  meta: (item: T) => ObjectMeta,
): T[] {
  if (states.length === 0) return [...listed];
  const names = new Set(states.map((s) => meta(s).name));
  const kept = listed.filter((item) => !names.has(meta(item).name));
  const added = states.filter((s) => matchesSelector(selector, meta(s).labels));
  return [...kept, ...added].sort((a, b) => compare(meta(a).name, meta(b).name));
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
