/**
 * The leader's work: one pass = claimable pools for the admission policy → IPAMNodes → leaked addresses →
 * deleted nodes → unowned empty blocks → pool status → blocks' Trusted condition → usage
 * metrics, all from the watch caches. A pass starts when a watched object
 * changes (debounced by `debounceMs`, so a burst of pod deletions makes one pass) and at least
 * every `resyncMs` (grace periods expire without any event). No pass runs while a watch has not
 * synced or is failing: missing data means keep.
 */
import { newStats, withSignal } from 'blockipam/core';
import type {
  AllocatorStats,
  Datastore,
  IPAMBlock,
  IPAMNode,
  ResourceStore,
  StatusResourceStore,
} from 'blockipam/core';
import { claimPoolsStep } from './admission/claim-pools.ts';
import { BlockAffinities } from './block-churn.ts';
import type { ClaimPoolsSink, ClaimPoolsStep } from './admission/claim-pools.ts';
import { DEFAULT_MAX_EVENTS_PER_PASS } from './events.ts';
import type { EventSink } from './events.ts';
import { leakStep } from './gc/leak-pass.ts';
import type { LeakStep } from './gc/leak-pass.ts';
import { GoneNodes } from './gc/gone-nodes.ts';
import { deletedNodeStep, quarantineStep, unownedBlockStep } from './gc/node-pass.ts';
import type { NodeStep } from './gc/node-pass.ts';
import { LeakCandidates } from './gc/scan.ts';
import type { ControllerMetrics } from './metrics.ts';
import { EventBudget } from './pass.ts';
import type { PassContext, PassLog } from './pass.ts';
import { ipamNodeStep } from './routes/ipam-node-step.ts';
import type { IPAMNodeStep } from './routes/ipam-node-step.ts';
import { blockTrustStep } from './status/block-trust.ts';
import { managedFieldsStep } from './status/managed-fields.ts';
import { podCIDRBlockStep } from './adopt/podcidr-blocks.ts';
import type { PodCIDRBlockStep } from './adopt/podcidr-blocks.ts';
import type { BlockTrustStep } from './status/block-trust.ts';
import { PoolEventLimiter, poolStatusStep } from './status/status-pass.ts';
import type { StatusStep } from './status/status-pass.ts';
import type { ClusterView } from './view.ts';

// 1 s: a node drain deletes its pods within a second or two; one pass then sees them all.
const DEFAULT_DEBOUNCE_MS = 1_000;
// 60 s: grace periods (default 900 s) and empty-block times (300 s) are checked at least this often.
const DEFAULT_RESYNC_MS = 60_000;

export interface ReconcilerOptions {
  ds: Datastore;
  /**
   * Writes a block's status subresource (KubeDatastore's / MemoryDatastore's
   * `blocks.updateStatus`); absent: the Trusted condition is computed and counted, not written.
   */
  blockStatus?: StatusResourceStore<IPAMBlock>['updateStatus'];
  /** Where the IPAMNodes go (KubeDatastore's `ipamNodes`); absent: planned, not written. */
  ipamNodes?: ResourceStore<IPAMNode>;
  view: ClusterView;
  log: PassLog;
  clock?: () => number;
  metrics?: ControllerMetrics;
  events?: EventSink;
  maxEventsPerPass?: number;
  onApiError?: (operation: string, error: unknown) => void;
  /** Counters core adds to (conflicts feed blockipam_api_conflicts_total). */
  stats?: AllocatorStats;
  /** Where the claimable pools go (the admission policy's ConfigMap); absent = not published. */
  claimPools?: ClaimPoolsSink;
  /**
   * How long a deleted node's blocks and allocations are quarantined (gc/gone-nodes.ts), in
   * seconds; 0 releases them as soon as no pod holds them. Default {@link DEFAULT_NODE_GONE_GRACE_SECONDS}.
   */
  nodeGoneGraceSeconds?: number;
}

// 10 min: a Node deleted while its kubelet runs is registered again by a kubelet restart (or a
// cloud node-lifecycle controller) within minutes, and pod GC deletes its pods 40 s after the
// Node; long enough for that, short enough that a node really gone frees its blocks soon.
export const DEFAULT_NODE_GONE_GRACE_SECONDS = 600;

/** What one pass did (undefined fields: the step did not run). */
export interface PassResult {
  skipped?: string;
  claimPools?: ClaimPoolsStep;
  podCIDRBlocks?: PodCIDRBlockStep;
  ipamNodes?: IPAMNodeStep;
  leaks?: LeakStep;
  nodes?: NodeStep;
  unownedBlocks?: string[];
  status?: StatusStep;
  trust?: BlockTrustStep;
  /** Blocks whose oversized managedFields were reset. */
  managedFields?: string[];
}

export class Reconciler {
  readonly candidates = new LeakCandidates();
  /** Deleted nodes and when each was first seen gone (their quarantine). */
  readonly #goneNodes = new GoneNodes();
  readonly #nodeGoneGraceMs: number;
  /** NearlyExhausted / Exhausted Events sent, per pool (rate limit). */
  readonly poolEvents = new PoolEventLimiter();
  readonly #affinities = new BlockAffinities();
  readonly stats: AllocatorStats;
  /** Blocks the last pass found unrouted (the IPAMNode step logs changes only). */
  readonly #unrouted = new Set<string>();
  /** podCIDR block conflicts already announced by an Event (once each per run). */
  readonly #podCIDRConflicts = new Set<string>();
  readonly #o: ReconcilerOptions;
  readonly #clock: () => number;

  constructor(options: ReconcilerOptions) {
    this.#o = options;
    this.#clock = options.clock ?? Date.now;
    this.#nodeGoneGraceMs = (options.nodeGoneGraceSeconds ?? DEFAULT_NODE_GONE_GRACE_SECONDS) * 1000;
    this.stats = options.stats ?? newStats();
  }

  /**
   * One pass. `mayWrite` is checked before every write step (leadership, shutdown); `signal`
   * (the elector's `deposed`) is bound to every request of the pass — core calls, re-check GETs,
   * status writes, Events: once it fires nothing more is sent, a request in flight is abandoned,
   * and no further write step starts. `view` replaces the configured one for this pass (tests
   * hand in what the watches would show).
   */
  async pass(
    options: { mayWrite?: () => boolean; view?: ClusterView; signal?: AbortSignal } = {},
  ): Promise<PassResult> {
    const view = options.view ?? this.#o.view;
    const { signal } = options;
    const allowed = options.mayWrite ?? (() => true);
    const mayWrite = (): boolean => signal?.aborted !== true && allowed();
    const notReady = view.notReady();
    if (notReady) {
      this.#o.metrics?.passes.inc({ outcome: 'skipped' });
      this.#o.log.debug('pass skipped', { reason: notReady });
      return { skipped: notReady };
    }
    const events = new EventBudget(
      this.#o.events,
      this.#o.maxEventsPerPass ?? DEFAULT_MAX_EVENTS_PER_PASS,
      (error) => this.#o.onApiError?.('event', error),
      signal,
    );
    const ctx: PassContext = {
      ds: withSignal(this.#o.ds, signal),
      blockStatus: this.#o.blockStatus && bindStatus(this.#o.blockStatus, signal),
      ipamNodes: this.#o.ipamNodes && bindStore(this.#o.ipamNodes, signal),
      view,
      clock: this.#clock,
      log: this.#o.log,
      metrics: this.#o.metrics,
      events,
      allocator: { clock: this.#clock, stats: this.stats, ...(signal ? { signal } : {}) },
      mayWrite,
      onApiError: this.#o.onApiError,
    };
    const claimPools = this.#o.claimPools ? await claimPoolsStep(ctx, this.#o.claimPools) : undefined;
    const podCIDRBlocks = await podCIDRBlockStep(ctx, this.#podCIDRConflicts);
    // Routes first: a claimed block is routed by every node once its IPAMNode is written.
    const ipamNodes = await ipamNodeStep(ctx, this.#unrouted);
    const quarantined = quarantineStep(ctx, this.#goneNodes, this.#nodeGoneGraceMs);
    const leaks = await leakStep(ctx, this.candidates, quarantined);
    const nodes = await deletedNodeStep(ctx, leaks, quarantined);
    const unownedBlocks = await unownedBlockStep(ctx);
    const status = await poolStatusStep(ctx, this.poolEvents);
    const trust = await blockTrustStep(ctx);
    const managedFields = await managedFieldsStep(ctx);
    this.#usageMetrics(leaks, view);
    await events.flush();
    this.#o.metrics?.passes.inc({ outcome: 'done' });
    return {
      ...(claimPools ? { claimPools } : {}),
      podCIDRBlocks,
      ipamNodes,
      leaks,
      nodes,
      unownedBlocks,
      status,
      trust,
      managedFields,
    };
  }

  /** Sets the usage gauges from the pass's scan and the watched blocks. */
  #usageMetrics(leaks: LeakStep, view: ClusterView): void {
    const m = this.#o.metrics;
    if (!m) return;
    const released = new Set(leaks.reclaim.released.map((c) => c.key));
    const count = (map: Map<string, number>, pool: string, node: string): void => {
      const key = JSON.stringify([pool, node]);
      map.set(key, (map.get(key) ?? 0) + 1);
    };
    const inUse = new Map<string, number>();
    const borrowed = new Map<string, number>();
    const blocks = new Map<string, number>();
    const candidates = new Map<string, number>();
    const affinity = new Map(view.blocks().map((b) => [b.metadata.name, b.spec.affinity]));
    for (const list of leaks.scan.byHandle.values())
      for (const a of list) {
        if (released.has(a.key)) continue;
        count(inUse, a.pool, a.allocation.node);
        if (affinity.get(a.block) !== a.allocation.node) count(borrowed, a.pool, a.allocation.node);
      }
    for (const b of view.blocks())
      count(blocks, b.metadata.labels?.['ipam.blockipam.io/pool'] ?? '', b.spec.affinity ?? '');
    for (const c of this.candidates.all()) count(candidates, c.pool, c.allocation.node);
    const set = (gauge: ControllerMetrics['inUse'], values: Map<string, number>): void => {
      gauge.reset();
      for (const [key, value] of values) {
        const [ippool, node] = JSON.parse(key) as [string, string];
        gauge.set({ ippool, node }, value);
      }
    };
    set(m.inUse, inUse);
    set(m.borrowed, borrowed);
    set(m.blocks, blocks);
    set(m.gcCandidates, candidates);
    const churn = this.#affinities.observe(view.blocks());
    for (const ippool of churn.claims) m.blockClaims.inc({ ippool });
    for (const ippool of churn.releases) m.blockReleases.inc({ ippool });
  }
}

/**
 * Runs passes until `signal` aborts: after `trigger()` (debounced) and every `resyncMs`. Passes
 * never overlap; a failed pass is logged and the next one starts on the next trigger / resync.
 */
export class PassScheduler {
  readonly #run: () => Promise<unknown>;
  readonly #debounceMs: number;
  readonly #resyncMs: number;
  #wake: (() => void) | undefined;
  #pending = true;

  constructor(run: () => Promise<unknown>, options: { debounceMs?: number; resyncMs?: number } = {}) {
    this.#run = run;
    this.#debounceMs = options.debounceMs ?? DEFAULT_DEBOUNCE_MS;
    this.#resyncMs = options.resyncMs ?? DEFAULT_RESYNC_MS;
  }

  /** Asks for a pass soon (watch events call this). */
  trigger(): void {
    this.#pending = true;
    this.#wake?.();
  }

  async loop(signal: AbortSignal, onError: (error: unknown) => void): Promise<void> {
    while (!signal.aborted) {
      this.#pending = false;
      try {
        await this.#run();
      } catch (error) {
        onError(error);
      }
      // Until a trigger (or one came during the pass) or the resync; then let a burst settle.
      if (!this.#pending) await this.#sleep(this.#resyncMs, signal, true);
      await this.#sleep(this.#debounceMs, signal, false);
    }
  }

  #sleep(ms: number, signal: AbortSignal, wakeOnTrigger = true): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.#wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      if (wakeOnTrigger) this.#wake = done;
    });
  }
}

/** A status writer bound to the pass's signal. */
function bindStatus(
  write: StatusResourceStore<IPAMBlock>['updateStatus'],
  signal: AbortSignal | undefined,
): (block: IPAMBlock) => Promise<IPAMBlock> {
  return (block) => write(block, signal ? { signal } : {});
}

/** An IPAMNode store whose calls carry the pass's signal. */
function bindStore(store: ResourceStore<IPAMNode>, signal: AbortSignal | undefined): ResourceStore<IPAMNode> {
  if (!signal) return store;
  return {
    get: (name, o) => store.get(name, { ...o, signal }),
    list: (o) => store.list({ ...o, signal }),
    listMetadata: (o) => store.listMetadata({ ...o, signal }),
    listPage: (o) => store.listPage({ ...o, signal }),
    create: (object, o) => store.create(object, { ...o, signal }),
    update: (object, o) => store.update(object, { ...o, signal }),
    delete: (name, preconditions, o) => store.delete(name, preconditions, { ...o, signal }),
  };
}
