/**
 * A Datastore view whose first LIST of this node's affine blocks is a read started earlier
 * (before the lock, with the pod and namespace GETs; on the one connection of
 * serial-transport.ts they go in sequence), so an uncontended ADD sends only the UPDATE while
 * holding the host lock. The request count is unchanged. A LIST that
 * is stale by the time it is used only costs a compare-and-swap conflict and a re-read inside
 * core (correctness never rests on it); core-backend.ts uses the view only when the host lock
 * was free at once, so another ADD on this node is unlikely to have written in between.
 */
import { nodeBlocksSelector } from 'blockipam/core';
import type { Datastore, ListOptions, ResourceStore, IPAMBlock } from 'blockipam/core';

/** Starts the LIST now; returns a view that hands it to the first matching `blocks.list`. */
export function prefetchAffineBlocks(ds: Datastore, node: string): Datastore {
  return servingFirstNodeList(ds, node, ds.blocks.list({ labelSelector: nodeBlocksSelector(node) }));
}

/**
 * A view of `ds` whose first `blocks.list` of `node`'s blocks (core's {@link nodeBlocksSelector})
 * answers with `first` — a LIST started earlier, or the node cache's blocks
 * (node-cache-use.ts); every other call, and later LISTs, go to `ds`.
 */
export function servingFirstNodeList(ds: Datastore, node: string, first: Promise<IPAMBlock[]>): Datastore {
  const selector = JSON.stringify(nodeBlocksSelector(node));
  let pending: Promise<IPAMBlock[]> | undefined = first;
  pending.catch(() => undefined); // observed by core when used; never an unhandled rejection
  const blocks: ResourceStore<IPAMBlock> = {
    get: (name, options) => ds.blocks.get(name, options),
    list: (options?: ListOptions) => {
      if (pending && JSON.stringify(options?.labelSelector) === selector) {
        const p = pending;
        pending = undefined;
        return p;
      }
      return ds.blocks.list(options);
    },
    listMetadata: (options) => ds.blocks.listMetadata(options),
    create: (object, options) => ds.blocks.create(object, options),
    update: (object, options) => ds.blocks.update(object, options),
    delete: (name, pre, options) => ds.blocks.delete(name, pre, options),
  };
  return {
    pools: ds.pools,
    blocks,
    configs: ds.configs,
    reservations: ds.reservations,
    getPod: (namespace, name, options) => ds.getPod(namespace, name, options),
    getNamespace: (name, options) => ds.getNamespace(name, options),
    getNode: (name, options) => ds.getNode(name, options),
    listPods: (options) => ds.listPods(options),
    listNodes: (options) => ds.listNodes(options),
  };
}
