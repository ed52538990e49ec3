/**
 * A Datastore with its blocks store replaced and everything else passed straight through: the
 * shape of every decorator of block reads and writes (the batching datastore, batching.ts) and of
 * tests' instrumented stores.
 */
import type { IPAMBlock } from '../resources.ts';
import type { Datastore, ResourceStore } from './datastore.ts';

/**
 * @param inner the datastore every call but the blocks' goes to (its stores and methods, bound)
 * @param blocks the blocks store to use instead of `inner.blocks`
 * @returns a new Datastore; `inner` is not changed
 */
export function withBlocks(inner: Datastore, blocks: ResourceStore<IPAMBlock>): Datastore {
  return {
    pools: inner.pools,
    blocks,
    configs: inner.configs,
    reservations: inner.reservations,
    getPod: (namespace, name, o) => inner.getPod(namespace, name, o),
    getNamespace: (name, o) => inner.getNamespace(name, o),
    getNode: (name, o) => inner.getNode(name, o),
    listPods: (o) => inner.listPods(o),
    listNodes: (o) => inner.listNodes(o),
    listPodPage: (o) => inner.listPodPage(o),
    listNodePage: (o) => inner.listNodePage(o),
  } satisfies Datastore;
}
