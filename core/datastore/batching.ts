/**
 * A Datastore decorator that coalesces concurrent compare-and-swap writes of one IPAMBlock into
 * one UPDATE (docs/design-core.md §Batched block writes): the node agent runs core's allocator for
 * many CNI requests at once, and their changes to the node's block go out together.
 *
 * - Idle blocks (no write in flight or held) are not cached: every call passes straight through.
 * - `blocks.update(b)` of an idle block sends `b` at once and makes the block busy, with `b` as
 *   its speculative state. While busy, reads (`get`, `list`, `listMetadata`, `listPage`) return
 *   the speculative state, its resourceVersion a token (`<resourceVersion>~<n>`, never a real
 *   one); an update carrying the current token is accepted as the new speculative state, anything
 *   else is refused at once with ConflictError (the allocator re-reads and gets the overlay). When
 *   the UPDATE in flight succeeds, the latest speculative state goes out as one UPDATE with the
 *   resourceVersion the server just returned.
 * - One UPDATE changes each allocation (ordinal) at most once, and writes the sequence down only
 *   when it adds no allocation (batching-queue.ts cannotJoin, the admission policy's rules): an
 *   update that would break that (a DEL's release and an ADD re-allocating the ordinal — as one
 *   write an entry changed in place) waits until the queued changes are sent (or dropped), then
 *   is refused with ConflictError: its allocator re-reads and its change goes in the UPDATE after.
 * - No answer before its write: each `update` resolves only once the UPDATE carrying its change
 *   succeeded, with the block as written. When that UPDATE fails, every caller in it and every
 *   caller queued on top of it rejects — ConflictError on a 409 (re-read and re-apply), else the
 *   inner error (UnavailableError, NotFoundError, …) — and the speculative state is dropped.
 * - A caller whose signal fires stops waiting at once, rejecting with the signal's reason. When
 *   its change is still queued (not in an UPDATE sent) it is dropped and never sent: the
 *   speculative state goes back to the one it was laid on, and the changes queued after it (laid
 *   on it) reject with ConflictError, so their allocator loops re-read and re-apply. A change
 *   already in an UPDATE sent may still land (as with any sent write). The inner UPDATE carries
 *   no caller's signal: one caller's abort never fails the others' write; the inner store's own
 *   deadline (KubeTransport `timeoutMs`) bounds it.
 * - `blocks.delete` with preconditions waits until the block is idle; an unconditional update of
 *   a busy block too. Everything else (create, other kinds, built-ins) passes through.
 * - The token of a state that was written (the last one of a batch) stands for the
 *   resourceVersion it was written at, so a caller that read it just before the block went idle
 *   still writes without a conflict (the server's compare-and-swap decides, as ever).
 */
import { ConflictError, isConflict } from '../errors/conflict.ts';
import { byName, type IPAMBlock } from '../resources.ts';
import {
  cannotJoin,
  idleOf,
  isToken,
  sentOf,
  tokenMinter,
  touchedBy,
  waiterFor,
  withVersion,
} from './batching-queue.ts';
import type { BusyBlock, Touched, Waiter } from './batching-queue.ts';
import { overlayList, overlayMetadata, overlayPage } from './batching-overlay.ts';
import type { CallOptions, Datastore, DeletePreconditions, ListOptions, ResourceStore } from './datastore.ts';
import { matchesSelector } from '../selector.ts';
import { isLaterVersion } from './resource-version.ts';
import { withBlocks } from './with-blocks.ts';
import { abortable } from './with-signal.ts';

/** Options of {@link createBatchingDatastore}. */
export interface BatchingOptions {
  /**
   * How long a busy block's next UPDATE is held after the previous one succeeded, ms (≥ 0), so
   * that the changes arriving meanwhile join it. Default 0: it goes out at once. Only a burst
   * pays it (changes queued while a write was in flight); a lone change of an idle block never
   * waits for it. The node agent sets it (docs/design-agent.md §IPAM server).
   */
  paceMs?: number;
  /** Waits `paceMs` (injected by tests); default a real timer. */
  sleep?: (ms: number) => Promise<void>;
}

/** Counters of a batching datastore since it was made. */
export interface BatchingStats {
  /** Block UPDATEs sent to the inner datastore. */
  updatesSent: number;
  /** UPDATEs that succeeded. */
  updatesWritten: number;
  /** UPDATEs that failed other than by 409 (UnavailableError, NotFoundError, a timeout …). */
  updatesFailed: number;
  /** Block updates (changes) accepted into a batch: the first of a block's write, or queued. */
  changesAccepted: number;
  /** Accepted changes whose UPDATE succeeded (a caller that stopped waiting included). */
  changesWritten: number;
  /**
   * Accepted changes neither written nor dropped: their UPDATE (or one before it) failed, or a
   * change queued before them was dropped (ConflictError: the allocator re-reads, re-applies).
   */
  changesRejected: number;
  /** Accepted changes dropped unsent because their caller's signal fired while they were queued. */
  changesAborted: number;
  /** Successful UPDATEs that carried more than one change. */
  batches: number;
  /** Updates refused locally with ConflictError (not computed on the latest speculative state). */
  localConflicts: number;
  /**
   * Updates that could not join the queued changes (an ordinal one of them changes; a sequence
   * written down beside an allocation): each waits until those are sent (or dropped), then is
   * refused with ConflictError (or rejects with its signal's reason).
   */
  ordinalWaits: number;
  /** UPDATEs the server refused with 409 Conflict (every change in and on top of it rejected). */
  serverConflicts: number;
  // updatesSent = updatesWritten + serverConflicts + updatesFailed + the UPDATEs in flight;
  // changesAccepted = changesWritten + changesRejected + changesAborted + the changes pending.
}

/** A Datastore whose block writes are batched, with its counters. */
export interface BatchingDatastore extends Datastore {
  /** A copy of the counters. */
  stats(): BatchingStats;
  /**
   * This datastore — the same batched block writes, busy blocks and counters — with block LISTs
   * read from `reads` instead of `inner` (a datastore over the same blocks: the node agent's view
   * answers from a watch, `reads` at the API server), the busy blocks' speculative states laid
   * over them as over `inner`'s. A busy block `reads` lists at a later resourceVersion than the
   * one its batch was computed on (core's isLaterVersion: another writer changed it, so that
   * UPDATE will lose its compare-and-swap; or `reads` saw our own UPDATE before its answer), or
   * does not list although its speculative state matches the selector (deleted, or not yet seen
   * by `reads`), is not overlaid: the LIST waits until that block is idle and reads it afresh
   * (this datastore's GET), so it answers the block as written or without it when it is gone —
   * never `reads`' copy from before the wait, nor a state laid over a deleted block. An idle
   * block `reads` lists at an earlier resourceVersion than our last write of it is read afresh
   * too. Everything else as this datastore.
   * @param reads where block LISTs go; its other stores are not used
   */
  readingFrom(reads: Datastore): Datastore;
}

/**
 * Wraps `inner` so that concurrent compare-and-swap writes of one block share one UPDATE.
 * Use one decorator per process (the node agent) and pass it to core's allocator calls.
 * @param inner the datastore written through (KubeDatastore in the agent)
 * @param options see {@link BatchingOptions}
 */
export function createBatchingDatastore(inner: Datastore, options: BatchingOptions = {}): BatchingDatastore {
  const blocks = new BatchingBlocks(inner.blocks, options);
  return {
    ...withBlocks(inner, blocks),
    stats: () => ({ ...blocks.stats }),
    readingFrom: (reads) => withBlocks(inner, blocks.readingFrom(reads.blocks)),
  } satisfies BatchingDatastore;
}

// 10 ms: about one API-server write round trip (~8 ms measured). A 409 under batching means
// another writer changed the block; the decorator already makes this process one writer per
// block, so the callers of the failed batch should come back together, in one UPDATE, not spread
// over core's backoff (up to 1 s) and split into many (docs/design-core.md §Batched block writes).
const BATCHED_BACKOFF_CAP_MS = 10;

/**
 * The allocator's `sleep` (AllocatorOptions.sleep) for callers of a batching datastore: core's
 * jittered backoff, each wait capped at 10 ms. Pass it with the decorator:
 * `autoAssign(createBatchingDatastore(ds), request, { sleep: batchedBackoffSleep() })`.
 * @param sleep waits ms (≥ 0); default a real timer (tests inject one)
 * @returns a sleep that waits `min(ms, 10)` through `sleep`
 */
export function batchedBackoffSleep(
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
): (ms: number) => Promise<void> {
  return (ms) => sleep(Math.min(ms, BATCHED_BACKOFF_CAP_MS));
}

/** The batched view of the blocks. */
class BatchingBlocks implements ResourceStore<IPAMBlock> {
  readonly stats: BatchingStats = {
    updatesSent: 0,
    updatesWritten: 0,
    updatesFailed: 0,
    changesAccepted: 0,
    changesWritten: 0,
    changesRejected: 0,
    changesAborted: 0,
    batches: 0,
    localConflicts: 0,
    ordinalWaits: 0,
    serverConflicts: 0,
  };
  readonly #inner: ResourceStore<IPAMBlock>;
  readonly #paceMs: number;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #mint = tokenMinter();
  /** Blocks with a write in flight or held: the only state kept. */
  readonly #busy = new Map<string, BusyBlock>();
  /** GETs in flight, shared by the callers that asked meanwhile. */
  readonly #reading = new Map<string, Promise<IPAMBlock | undefined>>();
  /** name → the token of the block's last written state and the resourceVersion it got. */
  readonly #written = new Map<string, { token: string; resourceVersion: string }>();

  constructor(inner: ResourceStore<IPAMBlock>, options: BatchingOptions) {
    this.#inner = inner;
    this.#paceMs = options.paceMs ?? 0;
    this.#sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  async get(name: string, options?: CallOptions): Promise<IPAMBlock | undefined> {
    const before = this.#busy.get(name);
    if (before) return this.#speculative(before);
    const got = await abortable(this.#shared(name), options?.signal);
    const now = this.#busy.get(name);
    return now ? this.#speculative(now) : got && structuredClone(got);
  }

  /**
   * One inner GET of `name` for every caller that asks while it is in flight (no caller's
   * signal: one caller's abort must not fail the others'). After a server 409 every caller of
   * the batch re-reads the block at once; without this, each sends its own GET. A write of the
   * block through this decorator ends the sharing (#unshare): a caller never joins a GET sent
   * before a write it may already have been answered for.
   */
  #shared(name: string): Promise<IPAMBlock | undefined> {
    const inFlight = this.#reading.get(name);
    if (inFlight) return inFlight;
    const reading: Promise<IPAMBlock | undefined> = this.#inner.get(name).finally(() => {
      if (this.#reading.get(name) === reading) this.#reading.delete(name);
    });
    this.#reading.set(name, reading);
    return reading;
  }

  #unshare(name: string): void {
    this.#reading.delete(name);
  }

  async list(...args: Parameters<ResourceStore<IPAMBlock>['list']>): Promise<IPAMBlock[]> {
    const got = await this.#inner.list(...args);
    return overlayList(got, this.#states(), args[0]?.labelSelector);
  }

  /** This store with LISTs from `reads` (BatchingDatastore.readingFrom). */
  readingFrom(reads: ResourceStore<IPAMBlock>): ResourceStore<IPAMBlock> {
    return {
      get: (name, options) => this.get(name, options),
      list: (options) => this.#listFrom(reads, options),
      listMetadata: (options) => this.listMetadata(options),
      listPage: (options) => this.listPage(options),
      create: (object, options) => this.create(object, options),
      update: (object, options) => this.update(object, options),
      delete: (name, preconditions, options) => this.delete(name, preconditions, options),
    };
  }

  /**
   * `reads`' LIST with the speculative states laid over it, except a busy block that `reads` lists
   * at a later resourceVersion than its batch's base (another writer changed it, or `reads` — a
   * watch — saw our own UPDATE before its answer came), or does not list although its speculative
   * state matches the selector (deleted meanwhile, or not yet seen by `reads`). What `reads` says
   * of such a block can neither be laid over nor trusted once the batch settles, so the LIST waits
   * until the block is idle and reads it afresh (this store's GET: the block as it now is, or gone
   * and so not listed). An idle block listed at an earlier resourceVersion than our last write of
   * it (it was busy while the LIST was in flight: `reads` read it before our UPDATE committed) is
   * read afresh too.
   */
  async #listFrom(reads: ResourceStore<IPAMBlock>, options?: ListOptions): Promise<IPAMBlock[]> {
    const signal = options?.signal;
    const selector = options?.labelSelector;
    const listed = await reads.list(options);
    const version = new Map(listed.map((b) => [b.metadata.name, b.metadata.resourceVersion]));
    const unsure = [...this.#busy.values()].filter((busy) =>
      version.has(busy.name)
        ? isLaterVersion(version.get(busy.name), busy.baseVersion)
        : matchesSelector(selector, busy.state.metadata.labels),
    );
    await Promise.all(unsure.map((busy) => idleOf(busy, signal)));
    // Idle now, but written by us after `reads` read it (busy while the LIST was in flight).
    const behind = listed
      .map((b) => b.metadata.name)
      .filter(
        (name) =>
          !this.#busy.has(name) &&
          isLaterVersion(this.#written.get(name)?.resourceVersion, version.get(name)),
      );
    const reread = new Set([...unsure.map((busy) => busy.name), ...behind]);
    const fresh = await Promise.all(
      [...reread].map((name) => this.get(name, signal ? { signal } : undefined)),
    );
    const kept = listed.filter((b) => !reread.has(b.metadata.name));
    for (const block of fresh)
      if (block && matchesSelector(selector, block.metadata.labels)) kept.push(block);
    kept.sort(byName);
    const states = [...this.#busy.values()]
      .filter((busy) => !reread.has(busy.name))
      .map((busy) => this.#speculative(busy));
    return overlayList(kept, states, selector);
  }

  async listMetadata(...args: Parameters<ResourceStore<IPAMBlock>['listMetadata']>) {
    const got = await this.#inner.listMetadata(...args);
    return overlayMetadata(got, this.#states(), args[0]?.labelSelector);
  }

  async listPage(...args: Parameters<ResourceStore<IPAMBlock>['listPage']>) {
    const page = await this.#inner.listPage(...args);
    return { ...page, items: overlayPage(page.items, this.#states(), args[0].labelSelector) };
  }

  async create(object: IPAMBlock, options?: CallOptions): Promise<IPAMBlock> {
    const created = await this.#inner.create(object, options);
    this.#unshare(object.metadata.name);
    this.#written.delete(object.metadata.name);
    return created;
  }

  async delete(name: string, preconditions?: DeletePreconditions, options?: CallOptions): Promise<void> {
    if (preconditions?.resourceVersion !== undefined || preconditions?.uid !== undefined)
      await idleOf(this.#busy.get(name), options?.signal);
    const version = preconditions?.resourceVersion;
    const real = isToken(version) ? this.#realVersion(name, version) : version;
    if (real === undefined && version !== undefined) throw this.#refuse(name, 'delete');
    await this.#inner.delete(
      name,
      version === undefined ? preconditions : { ...preconditions, resourceVersion: real },
      options,
    );
    this.#unshare(name);
    this.#written.delete(name);
  }

  async update(block: IPAMBlock, options?: CallOptions): Promise<IPAMBlock> {
    const signal = options?.signal;
    signal?.throwIfAborted();
    const name = block.metadata.name;
    const version = block.metadata.resourceVersion;
    const busy = this.#busy.get(name);
    if (version === undefined) {
      await idleOf(busy, signal);
      if (busy) return this.update(block, options);
      const written = await this.#inner.update(block, options);
      this.#unshare(name);
      return written;
    }
    if (busy) {
      if (version !== busy.token) throw this.#refuse(name, 'update');
      const touched = touchedBy(busy.state, block);
      const why = cannotJoin(
        busy.queued.flatMap((w) => (w.touched ? [w.touched] : [])),
        touched,
      );
      if (why !== undefined) {
        this.stats.ordinalWaits += 1;
        await sentOf(busy, signal);
        throw new ConflictError(
          `ipamblocks/${name}`,
          `ipamblocks "${name}": ${why}; re-read once it is sent`,
        );
      }
      return this.#accept(busy, block, signal, touched);
    }
    const base = isToken(version) ? this.#realVersion(name, version) : version;
    if (base === undefined) throw this.#refuse(name, 'update');
    const fresh: BusyBlock = {
      name,
      baseVersion: base,
      state: block,
      token: this.#mint(base),
      sending: false,
      inFlight: [],
      queued: [],
      onIdle: new Set(),
      onSend: new Set(),
    };
    this.#busy.set(name, fresh);
    const accepted = this.#accept(fresh, block, signal);
    this.#send(fresh);
    return accepted;
  }

  /**
   * Queues `block` as `busy`'s new speculative state; the promise settles with its write.
   * @param touched the ordinals it changes against the state it is laid on (undefined: the first
   *   change of an idle block, sent at once)
   */
  #accept(
    busy: BusyBlock,
    block: IPAMBlock,
    signal: AbortSignal | undefined,
    touched?: Touched,
  ): Promise<IPAMBlock> {
    const { waiter, promise } = waiterFor(signal, (aborted) => this.#drop(busy, aborted));
    if (touched) waiter.touched = touched;
    this.stats.changesAccepted += 1;
    if (busy.queued.length > 0 || busy.sending) {
      waiter.before = { state: busy.state, token: busy.token };
      busy.state = block;
      busy.token = this.#mint(busy.baseVersion);
    }
    busy.queued.push(waiter);
    return promise;
  }

  /**
   * `waiter`'s signal fired. Still queued: its change and the ones queued after it (laid on it)
   * leave the queue, the state goes back to the one it was laid on, and those after it reject
   * with ConflictError. In flight: nothing to undo.
   */
  #drop(busy: BusyBlock, waiter: Waiter): void {
    const at = busy.queued.indexOf(waiter);
    if (at < 0 || waiter.before === undefined) return; // a queued change was laid on a state: always
    const after = busy.queued.splice(at).slice(1);
    this.stats.changesAborted += 1;
    this.stats.changesRejected += after.length;
    busy.state = waiter.before.state;
    busy.token = waiter.before.token;
    for (const told of busy.onSend) told(); // a change waiting on a dropped one re-reads now
    busy.onSend.clear();
    const name = busy.name;
    const conflict = new ConflictError(
      `ipamblocks/${name}`,
      `ipamblocks "${name}": a change queued before this one was dropped (its caller's signal fired)`,
    );
    for (const later of after) later.reject(conflict);
  }

  /** Sends `busy`'s latest state as one UPDATE carrying every queued change. */
  #send(busy: BusyBlock): void {
    busy.sending = true;
    const carried = busy.queued;
    busy.inFlight = carried;
    busy.queued = [];
    const token = busy.token;
    this.stats.updatesSent += 1;
    for (const told of busy.onSend) told();
    busy.onSend.clear();
    this.#inner.update(withVersion(busy.state, busy.baseVersion)).then(
      (written) => this.#succeeded(busy, carried, token, written),
      (error: unknown) => this.#failed(busy, error as Error),
    );
  }

  /** The UPDATE succeeded: answer its callers; send what queued meanwhile, or go idle. */
  #succeeded(busy: BusyBlock, carried: Waiter[], token: string, written: IPAMBlock): void {
    this.stats.updatesWritten += 1;
    this.stats.changesWritten += carried.length;
    if (carried.length > 1) this.stats.batches += 1;
    for (const waiter of carried) waiter.resolve(written);
    busy.baseVersion = written.metadata.resourceVersion ?? busy.baseVersion;
    if (busy.queued.length > 0 && this.#paceMs > 0) {
      // held: still "sending" for #accept (a change laid on top keeps what to go back to)
      busy.inFlight = [];
      void this.#sleep(this.#paceMs).then(() => {
        if (this.#busy.get(busy.name) !== busy) return;
        if (busy.queued.length > 0) this.#send(busy);
        else this.#settle(busy, token); // every held change dropped: the state is the written one
      });
      return;
    }
    if (busy.queued.length > 0) {
      this.#send(busy);
      return;
    }
    this.#settle(busy, token);
  }

  /** `busy` goes idle with its state as written under `token`. */
  #settle(busy: BusyBlock, token: string): void {
    this.#written.set(busy.name, { token, resourceVersion: busy.baseVersion });
    this.#idle(busy);
  }

  /** The UPDATE failed: every change in it and on top of it fails with it; nothing stays cached. */
  #failed(busy: BusyBlock, error: Error): void {
    const everyone = [...busy.inFlight, ...busy.queued];
    if (isConflict(error)) this.stats.serverConflicts += 1;
    else this.stats.updatesFailed += 1;
    this.stats.changesRejected += everyone.length;
    this.#written.delete(busy.name);
    this.#idle(busy);
    for (const waiter of everyone) waiter.reject(error);
  }

  #idle(busy: BusyBlock): void {
    this.#busy.delete(busy.name);
    this.#unshare(busy.name);
    busy.sending = false;
    for (const wake of [...busy.onIdle, ...busy.onSend]) wake();
    busy.onIdle.clear();
    busy.onSend.clear();
  }

  /** The resourceVersion a token stands for: only the last written state's token has one. */
  #realVersion(name: string, token: string | undefined): string | undefined {
    const last = this.#written.get(name);
    return last && last.token === token ? last.resourceVersion : undefined;
  }

  #refuse(name: string, what: 'update' | 'delete'): ConflictError {
    this.stats.localConflicts += what === 'update' ? 1 : 0;
    return new ConflictError(
      `ipamblocks/${name}`,
      `ipamblocks "${name}": ${what} not computed on the block's latest state (batched writes in flight or done)`,
    );
  }

  #speculative(busy: BusyBlock): IPAMBlock {
    return structuredClone(withVersion(busy.state, busy.token));
  }

  /** The speculative states of the busy blocks, their resourceVersion the token. */
  #states(): IPAMBlock[] {
    return [...this.#busy.values()].map((busy) => this.#speculative(busy));
  }
}
