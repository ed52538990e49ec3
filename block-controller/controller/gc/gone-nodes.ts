/**
 * The quarantine of a deleted node's blocks (docs/design-controller.md §4): a Node that vanished
 * while blocks are affine to it, or allocations name it, may still run its kubelet and sandboxes
 * (`kubectl delete node` while the kubelet runs; a cloud node-lifecycle controller's delete and
 * re-registration), and their addresses are live. For `graceMs` after the controller first sees
 * the Node gone, nothing of it is released: its `node-gone` allocations stay allocated and its
 * blocks stay affine to it — not claimable by another node, and another node may borrow only
 * their free ordinals, never an allocated one. A Node of the name back within that time finds
 * its blocks as they were (the quarantine ends at once); after it, the release proceeds as for
 * any deleted node (gc/node-pass.ts, gc/scan.ts).
 *
 * In memory, by design, as the leak candidates: a new leader starts every quarantine again —
 * a release comes later after a failover, never earlier.
 */
import type { IPAMBlock } from 'blockipam/core';

/**
 * The nodes the blocks name — by affinity or by an allocation's `node` — that are not in
 * `live` (pure).
 */
export function goneNodeNames(blocks: readonly IPAMBlock[], live: Iterable<string>): Set<string> {
  const liveSet = new Set(live);
  const gone = new Set<string>();
  for (const block of blocks) {
    const affinity = block.spec.affinity;
    if (affinity !== null && !liveSet.has(affinity)) gone.add(affinity);
    for (const allocation of Object.values(block.spec.allocations))
      if (allocation.node && !liveSet.has(allocation.node)) gone.add(allocation.node);
  }
  return gone;
}

/** When each gone node was first seen gone (ms since epoch, the injected clock's). */
export class GoneNodes {
  readonly #sinceMs = new Map<string, number>();

  /**
   * Replaces the set of gone nodes with `gone`, keeping the first-seen times of those still gone;
   * a node no longer in it (back, or nothing names it any more) is forgotten.
   * @returns the nodes seen gone for the first time, and those back (forgotten)
   */
  observe(gone: ReadonlySet<string>, nowMs: number): { fresh: string[]; back: string[] } {
    const back = [...this.#sinceMs.keys()].filter((node) => !gone.has(node));
    for (const node of back) this.#sinceMs.delete(node);
    const fresh = [...gone].filter((node) => !this.#sinceMs.has(node));
    for (const node of fresh) this.#sinceMs.set(node, nowMs);
    return { fresh, back };
  }

  /**
   * True while `node` has been seen gone for less than `graceMs` — and for a node not seen gone
   * at all (not yet observed: never released before its quarantine started). `graceMs` 0: never.
   */
  quarantined(node: string, nowMs: number, graceMs: number): boolean {
    if (graceMs <= 0) return false;
    const since = this.#sinceMs.get(node);
    return since === undefined || nowMs - since < graceMs;
  }

  /** The end of `node`'s quarantine (ms since epoch), or undefined when not seen gone. */
  endsAtMs(node: string, graceMs: number): number | undefined {
    const since = this.#sinceMs.get(node);
    return since === undefined ? undefined : since + graceMs;
  }
}
