/**
 * The lock hand-off's two halves in the backend (host/handoff-file.ts holds the file):
 * - {@link handoffView}: under the lock, a hand-off the last holder wrote answers core's first
 *   LIST of this node's blocks (prefetch.ts' servingFirstNodeList, with its claim re-check);
 * - {@link recordNodeBlocks}: a view that follows what this call learns of the node's blocks —
 *   the LIST it was served, then its own CREATEs, UPDATEs, DELETEs and GETs, each with the API
 *   server's answer — so that the holder can hand the list on when it releases. A call that
 *   wrote a block without having seen the node's list hands nothing on and drops the old
 *   hand-off (it would now cost the next holder a conflict).
 */
import { nodeBlocksSelector, nodeLabel } from 'blockipam/core';
import type { Datastore, IPAMBlock, ListOptions, ResourceStore } from 'blockipam/core';
import { dropHandoff, readHandoff, writeHandoff, type HandoffScope } from '../host/handoff-file.ts';
import { servingFirstNodeList, withBlocks } from './prefetch.ts';

/**
 * A view whose first node LIST is the hand-off, or undefined when there is no usable one.
 * @param accept a further condition on the handed-off blocks (DEL: they hold the handle in every
 *   family, else a release would find nothing in them and free nothing)
 */
export function handoffView(
  ds: Datastore,
  scope: HandoffScope,
  accept: (blocks: readonly IPAMBlock[]) => boolean = () => true,
): Datastore | undefined {
  const blocks = readHandoff(scope);
  return blocks && accept(blocks) ? servingFirstNodeList(ds, scope.node, Promise.resolve(blocks)) : undefined;
}

export interface NodeBlocksRecord {
  /** `base` seen through the record (several bases share it: a served view and `ds` itself). */
  over(base: Datastore): Datastore;
  /** The node's blocks as this call knows them now (undefined until it saw the node's list). */
  blocks(): IPAMBlock[] | undefined;
  /**
   * Writes the hand-off when the call saw the node's list (after its own writes), drops it when
   * it wrote blocks without that; leaves it alone when it wrote nothing.
   */
  handOff(): void;
}

/** Follows the node's blocks through this call (see the file comment). */
export function recordNodeBlocks(scope: HandoffScope): NodeBlocksRecord {
  const selector = JSON.stringify(nodeBlocksSelector(scope.node));
  const key = nodeLabel(scope.node);
  const isNodes = (b: IPAMBlock): boolean => b.metadata.labels?.[key] !== undefined;
  /** The node's blocks by name, once a node LIST was seen. */
  let known: Map<string, IPAMBlock> | undefined;
  let wrote = false;
  const put = (b: IPAMBlock): IPAMBlock => {
    if (known && isNodes(b)) known.set(b.metadata.name, b);
    return b;
  };
  const over = (ds: Datastore): Datastore => {
    const blocks: ResourceStore<IPAMBlock> = {
      get: (name, options) =>
        ds.blocks.get(name, options).then((b) => {
          if (b) put(b);
          else known?.delete(name);
          return b;
        }),
      list: async (options?: ListOptions) => {
        const list = await ds.blocks.list(options);
        if (JSON.stringify(options?.labelSelector) === selector)
          known = new Map(list.map((b) => [b.metadata.name, b]));
        return list;
      },
      listMetadata: (options) => ds.blocks.listMetadata(options),
      create: (object, options) => {
        wrote = true;
        return ds.blocks.create(object, options).then(put);
      },
      update: (object, options) => {
        wrote = true;
        return ds.blocks.update(object, options).then(put);
      },
      delete: async (name, pre, options) => {
        wrote = true;
        await ds.blocks.delete(name, pre, options);
        known?.delete(name);
      },
      listPage: (options) => ds.blocks.listPage(options),
    };
    return withBlocks(ds, blocks);
  };
  return {
    over,
    blocks: () => (known ? [...known.values()] : undefined),
    handOff() {
      if (known) writeHandoff(scope, [...known.values()]);
      else if (wrote) dropHandoff(scope);
    },
  };
}
