/**
 * Adopting the node from host-local (docs/design-adopt.md): with
 * `--host-local-store` and the Node labelled `blockipam.io/adopt=true`, each pass reads host-local's
 * store, plans the import against the node's live pods and its blocks as last known (core's
 * planHostLocalImport), records it through the view (core's recordHostLocalImports: one write per
 * block), and moves a file that stayed unmatched for the grace period into `<store>.quarantine/`
 * (never deleted). Passes run after a change of the node's pods, blocks or Node (debounced) and
 * every 10 s; a SIGKILL at any point and a re-run change nothing already done (an address held
 * by the same handle is done). A file gone between the plan and the write (its pod's DEL) has its
 * new allocation released again.
 */
import { mkdir, readdir, rename, stat } from 'node:fs/promises';
import { join } from 'node:path';
import {
  isAdoptionOptedIn,
  nodeBlocksSelector,
  planHostLocalImport,
  recordHostLocalImports,
  releaseByHandle,
  trustedAffine,
} from 'blockipam/core';
import type { Datastore, HostLocalImportPlan } from 'blockipam/core';
import { readStoreFiles } from 'blockipam/core/cni';
import { errorFields, F } from '../../shared/index.ts';
import type { Lifecycle, Logger } from '../../shared/index.ts';
import type { ViewDatastore } from '../ipam/view-datastore.ts';
import type { AgentMetrics } from '../metrics.ts';
import { ReconcileLoop } from '../reconcile-loop.ts';
import type { AgentState } from '../state.ts';

/**
 * Whether `state`'s Node is opted in (core's isAdoptionOptedIn: labelled `blockipam.io/adopt=true`);
 * undefined while the Node is not known.
 */
export function adoptionWanted(state: AgentState): boolean | undefined {
  const node = state.nodeObject();
  return node === undefined ? undefined : isAdoptionOptedIn(node);
}

/** The directory quarantined files of `store` go to (beside it: host-local never reads it). */
export const quarantineDirOf = (store: string): string => `${store.replace(/\/+$/, '')}.quarantine`;

export interface HostLocalAdoptionOptions {
  readonly state: AgentState;
  readonly view: Datastore & Pick<ViewDatastore, 'lastKnown'>;
  /** host-local's store directory, `<dataDir>/<network>`. */
  readonly store: string;
  /** blockipam's CNI network name (the handles' first part). */
  readonly network: string;
  /** How long a file stays unmatched before it is quarantined, ms. */
  readonly graceMs: number;
  readonly log: Logger;
  readonly metrics: AgentMetrics;
  readonly lifecycle: Lifecycle;
  /**
   * Called by every pass with the node's opt-in, after the import (the installer's `adoption`:
   * the conflist written or removed); a rejection is logged and retried by the next pass.
   */
  readonly optIn: (optedIn: boolean) => Promise<void>;
  /** ms since epoch; default Date.now. */
  readonly clock?: () => number;
  /** Period of the timed pass, ms. Default 10 000. */
  readonly tickMs?: number;
}

/** What the last pass found, by file. */
export interface AdoptionCounts {
  readonly imported: number;
  readonly pending: number;
  readonly quarantined: number;
}

export class HostLocalAdoption extends ReconcileLoop<undefined> {
  readonly #o: HostLocalAdoptionOptions;
  readonly #clock: () => number;
  /** File → when a pass first found it unmatched (ms since epoch); forgotten once matched. */
  readonly #unmatched = new Map<string, number>();

  constructor(options: HostLocalAdoptionOptions) {
    super(undefined, { debounceMs: 200, resyncMs: options.tickMs ?? 10_000 });
    this.#o = options;
    this.#clock = options.clock ?? Date.now;
    options.state.onChange((kind) => {
      if (kind === 'pods' || kind === 'blocks' || kind === 'node') this.kick();
    });
    options.lifecycle.signal.addEventListener('abort', () => void this.stop());
  }

  /** Schedules a pass. */
  kick(): void {
    if (!this.#o.lifecycle.stopping) this.update(undefined);
  }

  protected async pass(): Promise<void> {
    const { state, metrics, log } = this.#o;
    const node = state.node;
    const wanted = adoptionWanted(state);
    if (!state.synced || wanted === undefined) return;
    if (wanted)
      try {
        const counts = await this.#import();
        for (const what of ['imported', 'pending', 'quarantined'] as const)
          metrics.hostLocalFiles.set({ node, state: what }, counts[what]);
        metrics.adoptPasses.inc({ node, status: 'done' });
      } catch (error) {
        metrics.adoptPasses.inc({ node, status: 'error' });
        log.warn('host-local import pass failed; retrying on the next tick', errorFields(error));
      }
    else this.#unmatched.clear();
    await this.#o
      .optIn(wanted)
      .catch((error: unknown) =>
        log.error(
          'conflist not changed for the adoption label; retrying on the next tick',
          errorFields(error),
        ),
      );
  }

  async #import(): Promise<AdoptionCounts> {
    const { state, view, store, network, log, lifecycle } = this.#o;
    const node = state.node;
    const { files } = await readStoreFiles(store);
    const blocks = trustedAffine(view.lastKnown(nodeBlocksSelector(node)), state.pools(), node);
    const plan = planHostLocalImport({ node, network, files, pods: state.pods(), blocks });
    let recorded: readonly string[] = [];
    if (plan.imports.length > 0) {
      const outcome = await lifecycle.track(recordHostLocalImports(view, blocks, plan.imports));
      recorded = outcome.recorded;
      await this.#undoGone(plan, recorded);
      if (recorded.length > 0)
        log.info('host-local addresses imported', {
          [F.node]: node,
          count: recorded.length,
          files: recorded.slice(0, 20),
        });
    }
    const pending = await this.#quarantine(plan);
    const quarantined = (await readdir(quarantineDirOf(store)).catch(() => [] as string[])).length;
    return { imported: plan.done.length + recorded.length, pending, quarantined };
  }

  /** Releases what was recorded for a file its pod's DEL removed meanwhile (a DEL found nothing yet). */
  async #undoGone(plan: HostLocalImportPlan, recorded: readonly string[]): Promise<void> {
    const { state, view, store, log } = this.#o;
    for (const i of plan.imports.filter((x) => recorded.includes(x.file))) {
      const still = await stat(join(store, i.file)).then(
        () => true,
        () => false,
      );
      if (still) continue;
      await releaseByHandle(view, i.owner.handle, { node: state.node });
      log.info('imported address released again: its file went meanwhile', {
        [F.node]: state.node,
        address: i.address,
        handle: i.owner.handle,
      });
    }
  }

  /**
   * Moves each file unmatched for the grace period aside.
   * @returns the files still waiting out the grace period
   */
  async #quarantine(plan: HostLocalImportPlan): Promise<number> {
    const { store, graceMs, log, state } = this.#o;
    const now = this.#clock();
    const waiting = new Set(plan.quarantine.map((q) => q.file));
    for (const file of [...this.#unmatched.keys()]) if (!waiting.has(file)) this.#unmatched.delete(file);
    let pending = 0;
    for (const q of plan.quarantine) {
      const since = this.#unmatched.get(q.file) ?? now;
      this.#unmatched.set(q.file, since);
      if (now - since < graceMs) {
        pending += 1;
        continue;
      }
      const dir = quarantineDirOf(store);
      await mkdir(dir, { recursive: true, mode: 0o755 });
      await rename(join(store, q.file), join(dir, q.file)).catch((error: unknown) => {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      });
      this.#unmatched.delete(q.file);
      log.warn('host-local file quarantined', {
        [F.node]: state.node,
        [F.path]: join(dir, q.file),
        why: q.why,
      });
    }
    return pending;
  }
}
