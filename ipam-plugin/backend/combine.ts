/**
 * Combining (docs/design-plugin.md §Host lock, "Combining"): the lock holder serves the ADDs and
 * DELs queued behind it (host/lock-queue.ts) together, so that a burst of n ADDs or DELs on a
 * node costs one UPDATE per block touched instead of n.
 *
 * {@link combiningView} is a Datastore whose node blocks live in memory: core's allocator runs
 * on it unchanged, request after request; its UPDATEs of the node's blocks are applied to the
 * in-memory copy (a compare-and-swap against that copy, which keeps the resourceVersion it was
 * read with), and {@link CombiningView.flush} then writes each changed block once — a real
 * compare-and-swap on the version the holder last saw. Everything else (a claim's CREATE, a
 * borrowed block of another node) goes to the API server at once, as without it. A flush that
 * loses its compare-and-swap (another writer: the agent, the controller, a borrowing node) has
 * written none of that block's allocations; the requests with an address in it are not served,
 * and a dual-stack one whose other block was written is released again.
 */
import { autoAssign, ConflictError, nodeBlocksSelector, nodeLabel, releaseByHandle } from 'blockipam/core';
import type {
  AssignedAddress,
  Datastore,
  IPAMBlock,
  ListOptions,
  PoolSnapshot,
  ResourceStore,
} from 'blockipam/core';
import {
  answerQueued,
  takeQueued,
  type QueueAnswer,
  type QueueScope,
  type ServedAddresses,
  type Ticket,
} from '../host/lock-queue.ts';
import { withBlocks } from './prefetch.ts';

export interface CombiningView {
  readonly ds: Datastore;
  /**
   * Writes each block changed in memory once (UPDATE with the version last read).
   * @returns the names of the blocks whose write failed (conflict, gone, unreachable)
   */
  flush(signal?: AbortSignal): Promise<Set<string>>;
}

const copy = <T>(o: T): T => structuredClone(o);

/**
 * A view of `base` whose node blocks are `nodeBlocks` (the node's list as the holder last saw
 * it, its own write included) held in memory; see the file comment.
 */
export function combiningView(
  base: Datastore,
  node: string,
  nodeBlocks: readonly IPAMBlock[],
): CombiningView {
  const selector = JSON.stringify(nodeBlocksSelector(node));
  const key = nodeLabel(node);
  const held = new Map(nodeBlocks.map((b) => [b.metadata.name, copy(b)]));
  const dirty = new Set<string>();
  const blocks: ResourceStore<IPAMBlock> = {
    get: (name, options) => {
      const b = held.get(name);
      return b ? Promise.resolve(copy(b)) : base.blocks.get(name, options);
    },
    list: async (options?: ListOptions) => {
      if (JSON.stringify(options?.labelSelector) === selector)
        return [...held.values()].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name)).map(copy);
      const list = await base.blocks.list(options);
      return list.map((b) => copy(held.get(b.metadata.name) ?? b));
    },
    listMetadata: (options) => base.blocks.listMetadata(options),
    listPage: (options) => base.blocks.listPage(options),
    create: async (object, options) => {
      const created = await base.blocks.create(object, options);
      if (created.metadata.labels?.[key] !== undefined) held.set(created.metadata.name, copy(created));
      return created;
    },
    update: (object, options) => {
      const name = object.metadata.name;
      const b = held.get(name);
      if (!b) return base.blocks.update(object, options);
      if (
        object.metadata.resourceVersion !== undefined &&
        object.metadata.resourceVersion !== b.metadata.resourceVersion
      )
        return Promise.reject(new ConflictError(`ipamblocks/${name}`));
      const next = copy(object);
      next.metadata.resourceVersion = b.metadata.resourceVersion;
      held.set(name, next);
      dirty.add(name);
      return Promise.resolve(copy(next));
    },
    delete: async (name, pre, options) => {
      if (dirty.has(name)) throw new Error(`combining view: IPAMBlock ${name} has unwritten changes`);
      await base.blocks.delete(name, pre, options);
      held.delete(name);
    },
  };
  return {
    ds: withBlocks(base, blocks),
    async flush(signal) {
      const failed = new Set<string>();
      for (const name of [...dirty].sort()) {
        const b = held.get(name);
        if (!b) continue;
        try {
          held.set(name, await base.blocks.update(b, signal ? { signal } : {}));
        } catch {
          failed.add(name);
        }
      }
      dirty.clear();
      return failed;
    },
  };
}

/** What {@link serveQueue} did, for the holder's `done` line. */
export interface Served {
  /** Requests taken from the queue. */
  readonly taken: number;
  /** Answered with addresses (ADD) or a release (DEL). */
  readonly served: number;
  /** Blocks whose combined write failed. */
  readonly flushFailed: number;
}

/**
 * Takes the queued requests of the holder's node — ADDs only when it has a pool snapshot to
 * decide them with — serves them in turn on a combining view of `base` seeded with the node's
 * blocks, writes each changed block once, and answers every taken request. A request core
 * refuses or fails (no room, a refused pool, an error), or one with an address in a block whose
 * write failed, is answered "not served": its waiter decides itself, on fresh reads. Never
 * throws; stops deciding once `signal` fires (what was decided is still written and answered).
 */
export async function serveQueue(o: {
  readonly base: Datastore;
  readonly scope: QueueScope;
  readonly nodeBlocks: readonly IPAMBlock[];
  /** The holder's pool snapshot; absent (a DEL holder): queued ADDs are left queued. */
  readonly snapshot?: PoolSnapshot;
  readonly signal: AbortSignal;
}): Promise<Served> {
  const taken = takeQueued(o.scope, o.snapshot ? {} : { kinds: new Set(['del'] as const) });
  if (taken.length === 0) return { taken: 0, served: 0, flushFailed: 0 };
  const view = combiningView(o.base, o.scope.node, o.nodeBlocks);
  /** Per request: its answer if the blocks it wrote are written, and those blocks. */
  const decided = new Map<string, { answer: QueueAnswer; blocks: string[] }>();
  for (const q of taken) {
    if (o.signal.aborted) break;
    try {
      if (q.kind === 'add') {
        const out = await autoAssign(view.ds, { ...q.request, snapshot: o.snapshot! }, { signal: o.signal });
        if (!out.ok) continue;
        const served = { ...(out.ipv4 ? { ipv4: out.ipv4 } : {}), ...(out.ipv6 ? { ipv6: out.ipv6 } : {}) };
        decided.set(q.id, { answer: { served }, blocks: addressesOf(served).map((a) => a.block) });
      } else {
        const { handle, node, podUID } = q.release;
        const r = await releaseByHandle(
          view.ds,
          handle,
          { node, ...(podUID !== undefined ? { podUID } : {}) },
          {
            signal: o.signal,
          },
        );
        decided.set(q.id, {
          answer: { released: r.released.length },
          blocks: r.released.map((a) => a.block),
        });
      }
    } catch {
      // not served; core rolled back what it had assigned in memory
    }
  }
  let failed: Set<string>;
  try {
    failed = await view.flush();
  } catch {
    failed = new Set(['*']);
  }
  const lost = (b: string): boolean => failed.has(b) || failed.has('*');
  let served = 0;
  for (const q of taken) {
    const d = decided.get(q.id);
    const ok = d !== undefined && !d.blocks.some(lost);
    if (d && !ok && q.kind === 'add' && d.blocks.some((b) => !lost(b))) {
      // dual-stack, one family written: free it again (best effort; the runtime's DEL after the
      // waiter's own attempt fails on it frees it otherwise). A DEL written in part is finished
      // by the waiter's own DEL (by handle).
      await releaseByHandle(o.base, q.request.handle, { node: o.scope.node }).catch(() => undefined);
    }
    if (ok) served++;
    answerQueued(o.scope, q.id, ok ? d.answer : {});
  }
  return { taken: taken.length, served, flushFailed: failed.size };
}

const addressesOf = (s: ServedAddresses): AssignedAddress[] =>
  [s.ipv4, s.ipv6].filter((a): a is AssignedAddress => a !== undefined);

/**
 * A waiter whose lock wait timed out after a holder took its request: that holder answers within
 * its time budget, so this polls for the answer (every 50 ms) for at most `timeoutMs`.
 * @returns the answer, or undefined when none came in time (the holder died)
 */
export async function awaitAnswer(ticket: Ticket, timeoutMs: number): Promise<QueueAnswer | undefined> {
  const until = Date.now() + timeoutMs;
  for (let a = ticket.answer(); ; a = ticket.answer()) {
    if (a !== undefined) return a;
    if (Date.now() > until) return undefined;
    await new Promise((r) => setTimeout(r, 50));
  }
}
