/**
 * The IPAM server's datastore (docs/design-agent.md §IPAM server): the agent's KubeDatastore,
 * except that a LIST of this node's blocks is answered from the agent's label-selected watch of
 * them, with the agent's own writes laid over it the moment they succeed — so the next request
 * sees its predecessor's write before the watch echoes it. Everything else (GETs, other LISTs,
 * every write) goes to the inner datastore.
 *
 * A LIST is "of this node's blocks" when its selector requires this node's label
 * (`node.ipam.blockipam.io/<key>` in matchLabels, or an Exists / In requirement on it): every
 * block it can select carries the label, so the watch holds them all; the answer is the watched
 * blocks that match the selector (core's matchesSelector). A stale answer is safe for writes:
 * every write is a compare-and-swap, and a write that loses one re-reads that block (a GET, laid
 * over the view) before the error goes back to the allocator. It is not safe for a decision that
 * a handle holds nothing (another writer's allocation the watch has not delivered yet), so:
 * while the watch is not current (`current()` false: disconnected or not listed yet) such a LIST
 * goes to the inner datastore, and `direct` is the same datastore with such LISTs always sent
 * there — for a DEL or CHECK the view may answer only in part (core's NodeIpamOptions.authority).
 * Such confirmation LISTs are shared: one in flight at a time per selector, and the callers that
 * arrive meanwhile share the next one (sent once the first has answered, so after they missed).
 * Every copy of a block laid over the view — a write's answer, the re-read after a lost
 * compare-and-swap, a LIST answered by the inner datastore — keeps the newer copy (`fresher`, one
 * rule): it is not laid when the view already has the block at a later resourceVersion (an
 * overlay of ours, or the watch's copy), nor over a deletion of ours at its resourceVersion or
 * later, nor, for a copy read rather than written, when the watch holds no copy of the block (a
 * DELETE the watch delivered would leave such an overlay forever). The caller gets what it read
 * either way. Each block it writes also tells what the write did to each handle (`written`,
 * handle-writes.ts): what the node IPAM service asks to answer a DEL from the view alone.
 */
import {
  isConflict,
  isLaterVersion as later,
  isNotFound,
  matchesSelector,
  nodeLabel,
  withBlocks,
} from 'blockipam/core';
import type {
  Datastore,
  DeletePreconditions,
  IPAMBlock,
  LabelSelector,
  ListOptions,
  ResourceStore,
} from 'blockipam/core';
import { handleWrites } from './handle-writes.ts';
import { sharedLists } from './shared-lists.ts';

export interface ViewDatastoreOptions {
  /** The agent's datastore: everything the view does not answer goes there. */
  readonly inner: Datastore;
  readonly node: string;
  /** The watched blocks carrying the node's label (AgentState.nodeBlocks). */
  readonly watched: () => readonly IPAMBlock[];
  /**
   * True while the watch of the node's blocks is connected and has listed (AgentState
   * nodeBlocksCurrent); while false, LISTs of the node's blocks go to `inner`. Default: always.
   */
  readonly current?: () => boolean;
  /** ms since epoch, for how long a released handle is remembered (handle-writes.ts); default Date.now. */
  readonly clock?: () => number;
}

/** Counts for tests and metrics. */
interface ViewStats {
  /** LISTs of the node's blocks answered from the view. */
  viewLists: number;
  /** Block reads sent to the inner datastore (GETs, other LISTs, re-reads after a conflict). */
  blockReads: number;
  /** LISTs of the node's blocks sent to the inner datastore (watch not current, or `direct`). */
  directLists: number;
  /** Of those, LISTs `direct` sent to confirm a DEL or CHECK (shared by concurrent callers). */
  confirmLists: number;
}

export interface ViewDatastore extends Datastore {
  readonly stats: ViewStats;
  /**
   * The same datastore (writes laid over the view), except that LISTs of the node's blocks go to
   * the inner datastore, their answer laid over the view: for a DEL or CHECK the view may answer
   * only in part (core's NodeIpamOptions.authority). Concurrent callers with the same selector
   * share LISTs: at most one in flight and one pending (sent when the first answers); each
   * caller gets its own copy of the answer; a caller's signal rejects its own wait only.
   */
  readonly direct: Datastore;
  /**
   * The node's blocks `selector` selects as last known (the watch with this agent's writes laid
   * over it), whether or not the watch is current; no request, not counted in `viewLists`. What
   * upkeep plans from, and STATUS answers from during an outage.
   */
  lastKnown(selector: LabelSelector | undefined): IPAMBlock[];
  /** Tells the view of a watch event of one of the node's blocks (drops an overlay it caught up with). */
  observe(block: IPAMBlock): void;
  /**
   * What this agent's writes through the view did to `handle` (handle-writes.ts): the addresses
   * they allocated to it, `[]` when they released them within 10 min, else undefined. For core's
   * NodeIpamOptions.written.
   */
  written(handle: string): readonly string[] | undefined;
}

/** A write of ours not yet seen by the watch: the block as written, or undefined once deleted. */
interface Overlay {
  readonly block: IPAMBlock | undefined;
  readonly resourceVersion: string;
}

/** True when every object `selector` selects carries label `key` (matchLabels, Exists, In). */
function requiresLabel(selector: LabelSelector | undefined, key: string): boolean {
  return (
    selector?.matchLabels?.[key] !== undefined ||
    (selector?.matchExpressions ?? []).some(
      (r) => r.key === key && (r.operator === 'Exists' || r.operator === 'In'),
    )
  );
}

/**
 * True when a watched copy at `seen` makes the overlay redundant: a written block is caught up
 * with at its own resourceVersion, a deletion only by a later one (the watch's copy at the
 * deleted version is the block before the delete).
 */
function caughtUp(overlay: Overlay, seen: string | undefined): boolean {
  return overlay.block ? !later(overlay.resourceVersion, seen) : later(seen, overlay.resourceVersion);
}

/** Builds the view over `options.inner`. */
export function createViewDatastore(options: ViewDatastoreOptions): ViewDatastore {
  const { inner } = options;
  const key = nodeLabel(options.node);
  const overlays = new Map<string, Overlay>();
  const stats: ViewStats = { viewLists: 0, blockReads: 0, directLists: 0, confirmLists: 0 };
  const current = options.current ?? (() => true);
  const writes = handleWrites(options.clock);

  /**
   * True when a copy of block `name` at `resourceVersion` is not older than what the view has:
   * no overlay of ours at a later resourceVersion, no deletion of ours at this one or later (the
   * copy was read before the delete), no watched copy at a later one; and, for a copy `read`
   * rather than written, a watched copy at all (the watch may have delivered its DELETE already).
   * resourceVersions that cannot be compared count as equally new (core's isLaterVersion).
   */
  const fresher = (name: string, resourceVersion: string | undefined, read: boolean): boolean => {
    const overlay = overlays.get(name);
    if (overlay?.block && later(overlay.resourceVersion, resourceVersion)) return false;
    if (overlay && !overlay.block && !later(resourceVersion, overlay.resourceVersion)) return false;
    const seen = options.watched().find((b) => b.metadata.name === name);
    return seen ? !later(seen.metadata.resourceVersion, resourceVersion) : !read;
  };

  /** Lays `block` (a write's answer, or `read` from the inner datastore) over the view when `fresher`. */
  const lay = (block: IPAMBlock, read: boolean): void => {
    const { name, resourceVersion } = block.metadata;
    if (!fresher(name, resourceVersion, read)) return;
    overlays.set(name, { block: structuredClone(block), resourceVersion: resourceVersion ?? '' });
  };

  /** Lays our deletion of `name`, known at `resourceVersion`, unless an overlay of ours is later. */
  const layDeletion = (name: string, resourceVersion: string | undefined): void => {
    const current = overlays.get(name);
    if (current && later(current.resourceVersion, resourceVersion)) return;
    overlays.set(name, { block: undefined, resourceVersion: resourceVersion ?? '' });
  };

  const covers = (selector: LabelSelector | undefined): boolean => requiresLabel(selector, key);

  /** The view's copy of block `name` at exactly `resourceVersion` (an overlay, or the watch's), if any. */
  const copyAt = (name: string, resourceVersion: string | undefined): IPAMBlock | undefined => {
    if (resourceVersion === undefined) return undefined;
    const overlay = overlays.get(name);
    if (overlay?.block && overlay.resourceVersion === resourceVersion) return overlay.block;
    const seen = options.watched().find((b) => b.metadata.name === name);
    return seen?.metadata.resourceVersion === resourceVersion ? seen : undefined;
  };

  const fromView = (selector: LabelSelector | undefined): IPAMBlock[] => {
    const byName = new Map(options.watched().map((b) => [b.metadata.name, b]));
    for (const [name, overlay] of overlays) {
      const seen = byName.get(name);
      if (seen ? caughtUp(overlay, seen.metadata.resourceVersion) : !overlay.block) {
        overlays.delete(name); // the watch has caught up
        continue;
      }
      if (overlay.block) byName.set(name, overlay.block);
      else byName.delete(name);
    }
    return [...byName.values()]
      .filter((b) => matchesSelector(selector, b.metadata.labels))
      .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))
      .map((b) => structuredClone(b));
  };

  /** After a lost compare-and-swap: the block as it is now, laid over the view (best effort). */
  const reread = async (name: string, signal: AbortSignal | undefined): Promise<void> => {
    stats.blockReads += 1;
    try {
      const fresh = await inner.blocks.get(name, signal ? { signal } : {});
      if (fresh) lay(fresh, true);
    } catch {
      // the caller's own error goes back; the watch will catch up
    }
  };

  /**
   * A LIST of the node's blocks from the inner datastore, each block laid over the view when
   * `fresher` (the LIST may have been in flight across our DELETE, or the watch's); the caller
   * uses the answer regardless.
   */
  const fromInner = async (listOptions: ListOptions | undefined): Promise<IPAMBlock[]> => {
    stats.directLists += 1;
    const listed = await inner.blocks.list(listOptions);
    for (const b of listed) lay(b, true);
    return listed;
  };

  /** `direct`'s LIST of the node's blocks: shared as ViewDatastore.direct says (shared-lists.ts). */
  const confirm = sharedLists((shared) => {
    stats.confirmLists += 1;
    return fromInner(shared);
  });

  const blocks: ResourceStore<IPAMBlock> = {
    get(name, callOptions) {
      stats.blockReads += 1;
      return inner.blocks.get(name, callOptions);
    },
    async list(listOptions?: ListOptions) {
      if (covers(listOptions?.labelSelector)) {
        if (!current()) return fromInner(listOptions);
        listOptions?.signal?.throwIfAborted();
        stats.viewLists += 1;
        return fromView(listOptions?.labelSelector);
      }
      stats.blockReads += 1;
      return inner.blocks.list(listOptions);
    },
    listMetadata: (o) => inner.blocks.listMetadata(o),
    listPage: (o) => inner.blocks.listPage(o),
    async create(object, callOptions) {
      const created = await inner.blocks.create(object, callOptions);
      lay(created, false);
      writes.record(undefined, created);
      return created;
    },
    async update(object, callOptions) {
      const name = object.metadata.name;
      const base = copyAt(name, object.metadata.resourceVersion); // what the write was computed on
      try {
        const updated = await inner.blocks.update(object, callOptions);
        lay(updated, false);
        if (base) writes.record(base, updated);
        return updated;
      } catch (error) {
        if (isConflict(error)) await reread(name, callOptions?.signal);
        if (isNotFound(error)) layDeletion(name, object.metadata.resourceVersion);
        throw error;
      }
    },
    async delete(name, preconditions?: DeletePreconditions, callOptions?) {
      const known =
        preconditions?.resourceVersion ??
        overlays.get(name)?.resourceVersion ??
        options.watched().find((b) => b.metadata.name === name)?.metadata.resourceVersion;
      try {
        await inner.blocks.delete(name, preconditions, callOptions);
      } catch (error) {
        if (isNotFound(error)) layDeletion(name, known);
        throw error;
      }
      layDeletion(name, known);
    },
  };

  const direct: ResourceStore<IPAMBlock> = {
    ...blocks,
    list: (listOptions?: ListOptions) =>
      covers(listOptions?.labelSelector) ? confirm(listOptions) : blocks.list(listOptions),
  };
  const datastore = (store: ResourceStore<IPAMBlock>): Datastore => withBlocks(inner, store);

  return {
    ...datastore(blocks),
    stats,
    direct: datastore(direct),
    lastKnown: (selector) => fromView(selector),
    observe(block) {
      const overlay = overlays.get(block.metadata.name);
      if (overlay && caughtUp(overlay, block.metadata.resourceVersion)) overlays.delete(block.metadata.name);
    },
    written: (handle) => writes.get(handle),
  };
}

/**
 * The node's blocks as last known, and nothing else: LISTs of the node's blocks come from the
 * view; every other block read answers "none" (the API server is taken as unreachable, and what
 * is unknown is no obstacle); writes are refused. For STATUS during an API outage (status.ts).
 */
export function lastKnownDatastore(view: ViewDatastore, node: string): Datastore {
  const key = nodeLabel(node);
  const own = (selector: LabelSelector | undefined): boolean => requiresLabel(selector, key);
  const refuse = (): never => {
    throw new Error('the last known state is read-only');
  };
  return {
    ...view,
    blocks: {
      get: () => Promise.resolve(undefined),
      list: (o) => Promise.resolve(own(o?.labelSelector) ? view.lastKnown(o?.labelSelector) : []),
      listMetadata: () => Promise.resolve([]),
      listPage: () => Promise.resolve({ items: [], resourceVersion: '' }),
      create: refuse,
      update: refuse,
      delete: refuse,
    },
  };
}
