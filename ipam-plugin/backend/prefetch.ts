/**
 * A Datastore view whose first LIST of this node's blocks is a read made before the host lock —
 * a LIST started with the pod and namespace GETs (on the one connection of serial-transport.ts
 * they go in sequence), or the node cache's blocks (node-cache-use.ts) — so an uncontended ADD
 * sends only the UPDATE while holding the lock. The request count is unchanged.
 *
 * Such a LIST may be stale by the time core uses it under the lock (issue 9, 7c: ADD2 listed,
 * ADD1 took the lock, claimed a block and released; ADD2 then took a free lock — `waited` false
 * — and decided on a LIST without ADD1's block). Two kinds of decision rest on it:
 * - allocating in a block it shows: a compare-and-swap on that block, so a stale block costs one
 *   conflict and a re-read inside core, never a duplicate;
 * - claiming a new block because it shows none with room: re-checked here on state read under
 *   the lock. A claim starts with core's metadata LIST of the pool's region (core/allocator/
 *   claim.ts); when that shows a block affine to this node that the early LIST did not have, the
 *   view throws {@link StaleNodeBlocksError} before anything is created, and the caller
 *   (core-backend.ts) decides again on a fresh LIST. So a claim rests on a region LIST read under
 *   the lock: it never duplicates a block another ADD of this node claimed meanwhile.
 */
import { nodeBlocksSelector, nodeLabel } from 'blockipam/core';
import type { Datastore, ListOptions, ResourceStore, IPAMBlock } from 'blockipam/core';

/**
 * A claim was about to rest on node blocks read before the lock, and the region LIST read under
 * the lock shows a block of this node they lacked. Nothing was created; decide again on fresh reads.
 */
export class StaleNodeBlocksError extends Error {
  override readonly name = 'StaleNodeBlocksError';
}

export function isStaleNodeBlocksError(e: unknown): e is StaleNodeBlocksError {
  return e instanceof Error && e.name === 'StaleNodeBlocksError';
}

/** Starts the LIST now; returns a view that hands it to the first matching `blocks.list`. */
export function prefetchAffineBlocks(ds: Datastore, node: string): Datastore {
  return servingFirstNodeList(ds, node, ds.blocks.list({ labelSelector: nodeBlocksSelector(node) }));
}

/**
 * A view of `ds` whose first `blocks.list` of `node`'s blocks (core's {@link nodeBlocksSelector})
 * answers with `first` — a LIST started earlier, or the node cache's blocks
 * (node-cache-use.ts); every other call, and later LISTs, go to `ds`. Once `first` has served,
 * a `blocks.listMetadata` (a claim's region LIST) showing a block affine to `node` that `first`
 * did not hold throws {@link StaleNodeBlocksError}.
 */
export function servingFirstNodeList(ds: Datastore, node: string, first: Promise<IPAMBlock[]>): Datastore {
  const selector = JSON.stringify(nodeBlocksSelector(node));
  const mine = nodeLabel(node);
  let pending: Promise<IPAMBlock[]> | undefined = first;
  /**
   * Names of the blocks core has seen through this view, from `first` on (later LISTs and its own
   * CREATEs add theirs); undefined until `first` has served.
   */
  let served: Set<string> | undefined;
  const seen = <T extends IPAMBlock | IPAMBlock[]>(got: T): T => {
    const list: readonly IPAMBlock[] = Array.isArray(got) ? got : [got];
    for (const b of list) served?.add(b.metadata.name);
    return got;
  };
  pending.catch(() => undefined); // observed by core when used; never an unhandled rejection
  const blocks: ResourceStore<IPAMBlock> = {
    get: (name, options) => ds.blocks.get(name, options).then((b) => b && seen(b)),
    list: (options?: ListOptions) => {
      if (pending && JSON.stringify(options?.labelSelector) === selector) {
        const p = pending;
        pending = undefined;
        return p.then((list) => {
          served = new Set(list.map((b) => b.metadata.name));
          return list;
        });
      }
      return ds.blocks.list(options).then(seen);
    },
    listMetadata: async (options) => {
      const metas = await ds.blocks.listMetadata(options);
      const known = served;
      const unseen = known && metas.find((m) => m.labels?.[mine] === 'affine' && !known.has(m.name));
      if (unseen)
        throw new StaleNodeBlocksError(
          `block ${unseen.name} of node ${node} was claimed after this ADD's first LIST of the node's blocks`,
        );
      return metas;
    },
    create: (object, options) => ds.blocks.create(object, options).then(seen),
    update: (object, options) => ds.blocks.update(object, options),
    delete: (name, pre, options) => ds.blocks.delete(name, pre, options),
    listPage: (options) => ds.blocks.listPage(options),
  };
  return withBlocks(ds, blocks);
}

/** `ds` with its `blocks` store replaced (every other call goes to `ds`, bound). */
export function withBlocks(ds: Datastore, blocks: ResourceStore<IPAMBlock>): Datastore {
  return {
    pools: ds.pools,
    blocks,
    configs: ds.configs,
    reservations: ds.reservations,
    getPod: (namespace, name, options) => ds.getPod(namespace, name, options),
    getNamespace: (namespace, options) => ds.getNamespace(namespace, options),
    getNode: (name, options) => ds.getNode(name, options),
    listPods: (options) => ds.listPods(options),
    listNodes: (options) => ds.listNodes(options),
    listPodPage: (options) => ds.listPodPage(options),
    listNodePage: (options) => ds.listNodePage(options),
  };
}
