/**
 * Combining (docs/design-plugin.md §Host lock, "Combining"): the lock holder allocates the ADDs
 * queued behind it (host/add-queue.ts) together, so that a burst of n ADDs on a node costs one
 * UPDATE per block touched instead of n.
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
  AssignOutcome,
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
  type QueueScope,
  type ServedAddresses,
  type Ticket,
} from '../host/add-queue.ts';
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
  /** Answered with addresses. */
  readonly served: number;
  /** Blocks whose combined write failed. */
  readonly flushFailed: number;
}

/**
 * Takes the queued ADDs of the holder's node, allocates them on a combining view of `base`
 * seeded with the node's blocks, writes each changed block once, and answers every taken
 * request (addresses, or not served). Failures of a request (no room, a refused pool, an error)
 * answer it "not served": its waiter decides itself, on fresh reads. Never throws; stops
 * allocating once `signal` fires (what was allocated is still written and answered).
 */
export async function serveQueue(o: {
  readonly base: Datastore;
  readonly scope: QueueScope;
  readonly nodeBlocks: readonly IPAMBlock[];
  readonly snapshot: PoolSnapshot;
  readonly signal: AbortSignal;
}): Promise<Served> {
  const taken = takeQueued(o.scope);
  if (taken.length === 0) return { taken: 0, served: 0, flushFailed: 0 };
  const view = combiningView(o.base, o.scope.node, o.nodeBlocks);
  const outcomes = new Map<string, ServedAddresses>();
  for (const q of taken) {
    if (o.signal.aborted) break;
    let out: AssignOutcome;
    try {
      out = await autoAssign(view.ds, { ...q.request, snapshot: o.snapshot }, { signal: o.signal });
    } catch {
      continue; // not served; core rolled back what it had assigned in memory
    }
    if (out.ok)
      outcomes.set(q.id, {
        ...(out.ipv4 ? { ipv4: out.ipv4 } : {}),
        ...(out.ipv6 ? { ipv6: out.ipv6 } : {}),
      });
  }
  let failed: Set<string>;
  try {
    failed = await view.flush();
  } catch {
    failed = new Set(['*']);
  }
  let served = 0;
  for (const q of taken) {
    const got = outcomes.get(q.id);
    const addresses = got ? [got.ipv4, got.ipv6].filter((a): a is AssignedAddress => a !== undefined) : [];
    const lost = addresses.some((a) => failed.has(a.block) || failed.has('*'));
    if (got && lost && addresses.some((a) => !failed.has(a.block))) {
      // dual-stack, one family written: free it again (best effort; the runtime's DEL after the
      // waiter's own attempt fails on it frees it otherwise)
      await releaseByHandle(o.base, q.request.handle, { node: o.scope.node }).catch(() => undefined);
    }
    if (got && !lost) served++;
    answerQueued(o.scope, q.id, got && !lost ? got : undefined);
  }
  return { taken: taken.length, served, flushFailed: failed.size };
}

/**
 * A waiter whose lock wait timed out after a holder took its request: that holder answers within
 * its time budget, so this polls for the answer (every 50 ms) for at most `timeoutMs`.
 * @returns the addresses, or undefined (not served, or no answer in time: the holder died)
 */
export async function awaitAnswer(ticket: Ticket, timeoutMs: number): Promise<ServedAddresses | undefined> {
  const until = Date.now() + timeoutMs;
  while (!ticket.answered()) {
    if (Date.now() > until) return undefined;
    await new Promise((r) => setTimeout(r, 50));
  }
  return ticket.answer();
}
