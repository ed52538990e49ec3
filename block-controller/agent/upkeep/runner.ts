/**
 * The pre-claim / release loop (docs/design-agent.md §Pre-claim): a pass plans from the view of
 * the node's blocks (core's planUpkeep) and carries the plan out through core's claimNodeBlock /
 * releaseIdleBlock, written through the same view, then plans again, until there is nothing to
 * do. Passes are serialised, run after a change (debounced) and every `tickMs` (empty blocks age
 * without an event; a failed pass is retried): the agent's reconcile loop (../reconcile-loop.ts).
 *
 * The view lays every write of this agent over the watch the moment it succeeds, so a block the
 * loop claimed counts at once, before the watch reports it (and one it released stops counting):
 * the pass after a claim sees the new headroom and does not claim again.
 */
import {
  cidrOf,
  claimNodeBlock,
  isAllocatable,
  nodeBlocksSelector,
  POOL_LABEL,
  poolCidr,
  releaseIdleBlock,
  snapshotOf,
  trustedAffine,
} from 'blockipam/core';
import type { Datastore, IPAMBlock, IPPool } from 'blockipam/core';
import { errorFields, F } from '../../shared/index.ts';
import type { Lifecycle, Logger } from '../../shared/index.ts';
import type { ViewDatastore } from '../ipam/view-datastore.ts';
import type { AgentMetrics } from '../metrics.ts';
import { ReconcileLoop } from '../reconcile-loop.ts';
import type { AgentState } from '../state.ts';
import { planUpkeep } from 'blockipam/core';
import type { UpkeepPlan } from 'blockipam/core';

export interface UpkeepOptions {
  readonly state: AgentState;
  /** The view of the node's blocks: planned from (`lastKnown`) and written through. */
  readonly view: Datastore & Pick<ViewDatastore, 'lastKnown'>;
  readonly log: Logger;
  readonly metrics: AgentMetrics;
  readonly lifecycle: Lifecycle;
  /** ms since epoch; default Date.now. */
  readonly clock?: () => number;
  /** Period of the timed pass, ms. Default 10 000. */
  readonly tickMs?: number;
}

// 10 s: empty blocks become releasable without any event; 10 s is small beside the default
// 300 s emptyBlockReleaseSeconds, and one pass on an idle node reads only the watch caches.
const DEFAULT_TICK_MS = 10_000;
// 50 ms: a burst of watch events (a pod's ADD touches one block) becomes one pass.
const DEBOUNCE_MS = 50;
// 64 rounds: maxBlocksPerNode defaults to 20 per family; a pass that still has work after 64
// claims or releases leaves the rest to the next one.
const MAX_ROUNDS = 64;

export class Upkeep extends ReconcileLoop<undefined> {
  readonly #o: UpkeepOptions;
  readonly #clock: () => number;
  #last: UpkeepPlan | undefined;

  constructor(options: UpkeepOptions) {
    super(undefined, { debounceMs: DEBOUNCE_MS, resyncMs: options.tickMs ?? DEFAULT_TICK_MS });
    this.#o = options;
    this.#clock = options.clock ?? Date.now;
    options.state.onChange((kind) => {
      if (kind !== 'pods' && kind !== 'namespaces') this.kick();
    });
    options.lifecycle.signal.addEventListener('abort', () => void this.stop());
  }

  /** Schedules a pass. */
  kick(): void {
    if (!this.#o.lifecycle.stopping) this.update(undefined);
  }

  /** Runs a pass now (after the running one) and resolves when it is done. */
  run(): Promise<void> {
    return this.flush();
  }

  /** The node's trusted affine blocks as last known: the watch with this agent's writes laid over it. */
  #affine(): IPAMBlock[] {
    const { state, view } = this.#o;
    return trustedAffine(view.lastKnown(nodeBlocksSelector(state.node)), state.pools(), state.node);
  }

  #plan(): UpkeepPlan {
    const { state } = this.#o;
    const nowMs = this.#clock();
    const snapshot = snapshotOf(
      { config: state.config(), pools: state.pools(), reservations: state.reservations() },
      nowMs,
    );
    return planUpkeep({
      node: state.node,
      nodeLabels: state.nodeObject()?.metadata.labels ?? {},
      snapshot,
      affine: this.#affine(),
      nowMs,
    });
  }

  protected async pass(): Promise<void> {
    const { state, metrics } = this.#o;
    // The node's labels decide pool eligibility: without its Node object nothing is known.
    if (!state.synced || state.nodeObject() === undefined) {
      metrics.upkeepPasses.inc({ node: state.node, status: 'waiting' });
      return;
    }
    try {
      await this.#rounds();
      metrics.upkeepPasses.inc({ node: state.node, status: 'done' });
    } catch (error) {
      metrics.upkeepPasses.inc({ node: state.node, status: 'error' });
      metrics.apiErrors.inc({ operation: 'upkeep', reason: (error as Error).name ?? 'Error' });
      this.#o.log.warn('pre-claim pass failed; retrying on the next tick', errorFields(error));
    }
  }

  /** Plans and carries the plan out until nothing is left, nothing progressed, or MAX_ROUNDS. */
  async #rounds(): Promise<void> {
    const { lifecycle } = this.#o;
    for (let round = 0; round < MAX_ROUNDS && !lifecycle.stopping; round++) {
      const plan = this.#plan();
      this.#report(plan);
      if (plan.claims.length === 0 && plan.releases.length === 0) return;
      let progressed = false;
      for (const pool of plan.claims) if (!lifecycle.stopping && (await this.#claim(pool))) progressed = true;
      for (const block of plan.releases)
        if (!lifecycle.stopping && (await this.#release(block))) progressed = true;
      if (!progressed) return;
    }
  }

  async #claim(pool: IPPool): Promise<boolean> {
    const { state, view, lifecycle, log, metrics } = this.#o;
    const family = poolCidr(pool).family;
    const snapshot = snapshotOf(
      { config: state.config(), pools: state.pools(), reservations: state.reservations() },
      this.#clock(),
    );
    // What maxBlocksPerNode counts: a frozen block (core's isAllocatable) is no room and no count.
    const held = this.#affine().filter((b) => cidrOf(b).family === family && isAllocatable(b)).length;
    const started = this.#clock();
    const got = await lifecycle.track(
      claimNodeBlock(view, {
        pool,
        node: state.node,
        reservations: snapshot.reservations,
        held,
        maxBlocksPerNode: snapshot.settings.maxBlocksPerNode,
        pools: snapshot.pools,
      }),
    );
    const fields = { [F.node]: state.node, [F.pool]: pool.metadata.name, [F.family]: family };
    if (got === 'limit' || got === 'full') {
      log.warn(
        got === 'limit' ? 'at maxBlocksPerNode; not pre-claiming' : 'pool has no free block to pre-claim',
        fields,
      );
      return false;
    }
    metrics.blocksClaimed.inc({ node: state.node, pool: pool.metadata.name });
    log.info('block pre-claimed', {
      ...fields,
      [F.block]: got.metadata.name,
      [F.cidr]: got.spec.cidr,
      [F.durationMs]: this.#clock() - started,
    });
    return true;
  }

  async #release(block: IPAMBlock): Promise<boolean> {
    const { state, view, lifecycle, log, metrics } = this.#o;
    const pool = block.metadata.labels?.[POOL_LABEL] ?? '';
    const released = await lifecycle.track(releaseIdleBlock(view, block));
    if (!released) {
      metrics.conflicts.inc({ operation: 'release' });
      return false;
    }
    metrics.blocksReleased.inc({ node: state.node, pool });
    log.info('idle block released', {
      [F.node]: state.node,
      [F.pool]: pool,
      [F.block]: block.metadata.name,
      [F.cidr]: block.spec.cidr,
    });
    return true;
  }

  #report(plan: UpkeepPlan): void {
    const { metrics, state } = this.#o;
    const node = state.node;
    if (this.#last)
      for (const old of this.#last.headroom) {
        metrics.freeAddresses.remove({ node, pool: old.pool, family: String(old.family) });
        metrics.affineBlocks.remove({ node, pool: old.pool, family: String(old.family) });
        metrics.atBlockLimit.remove({ node, pool: old.pool });
      }
    for (const room of plan.headroom) {
      const labels = { node, pool: room.pool, family: String(room.family) };
      metrics.freeAddresses.set(labels, room.free);
      metrics.affineBlocks.set(labels, room.blocks);
      metrics.atBlockLimit.set({ node, pool: room.pool }, plan.atLimit.includes(room.pool) ? 1 : 0);
    }
    metrics.watermark.set({ node }, plan.watermark);
    this.#last = plan;
  }
}
