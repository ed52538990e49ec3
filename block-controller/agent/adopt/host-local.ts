/**
 * Adopting the node from host-local (docs/design-adopt.md): with `--host-local-store` and the Node
 * labelled `blockipam.io/adopt=true`, each pass reads host-local's store, plans the import against
 * the node's live pods and its blocks as last known (core's planHostLocalImport), records it
 * through the view (core's recordHostLocalImports: one write per block), keeps and reports an
 * entry a live pod holds that cannot be imported (a conflict), and moves an entry no live pod held
 * for the grace period into `<store>.quarantine/` under a name no earlier one used — only if it
 * still holds what the pass read. The conflist is written only after a pass found every live pod
 * address in the node's blocks held by a store entry or an allocation (else the store is not this
 * network's). Passes run after a change of the node's pods, blocks or Node (debounced) and every
 * 10 s; a SIGKILL at any point and a re-run change nothing already done (an address held by the
 * same handle is done). A file gone or replaced between the plan and the write (its pod's DEL) has
 * its new allocation released again. */
import { lstat, mkdir, readdir, rename } from 'node:fs/promises';
import { join } from 'node:path';
import {
  cidrContains,
  cidrOf,
  handleOf,
  isAdoptionOptedIn,
  isLivePod,
  nodeBlocksSelector,
  ordinalOf,
  parseHostLocalFile,
  parseIP,
  planHostLocalImport,
  podIPs,
  recordHostLocalImports,
  releaseByHandle,
  trustedAffine,
} from 'blockipam/core';
import type { Datastore, HostLocalImportPlan, HostLocalQuarantine, IPAMBlock } from 'blockipam/core';
import { readRecord, readStoreFiles } from 'blockipam/core/cni';
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
  /** Entries a live pod holds that cannot be imported: kept in the store. */
  readonly conflict: number;
  /** Live pod addresses in the node's blocks held neither by a store entry nor an allocation. */
  readonly unaccounted: number;
}

export class HostLocalAdoption extends ReconcileLoop<undefined> {
  readonly #o: HostLocalAdoptionOptions;
  readonly #clock: () => number;
  /** File → when a pass first found it unmatched (ms since epoch); forgotten once matched. */
  readonly #unmatched = new Map<string, number>();
  /** What {@link HostLocalAdoption.#report} last logged, by kind. */
  readonly #reported = { conflicts: '', unaccounted: '' };

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
    let ready = !wanted;
    if (wanted)
      try {
        const counts = await this.#import();
        for (const what of FILE_STATES) metrics.hostLocalFiles.set({ node, state: what }, counts[what]);
        metrics.adoptPasses.inc({ node, status: 'done' });
        ready = counts.unaccounted === 0;
      } catch (error) {
        metrics.adoptPasses.inc({ node, status: 'error' });
        log.warn('host-local import pass failed; retrying on the next tick', errorFields(error));
      }
    else this.#unmatched.clear();
    // opted in: the conflist only after a pass that accounted for every pod address on the node
    if (ready)
      await this.#o
        .optIn(wanted)
        .catch((error: unknown) =>
          log.error(
            'conflist not changed for the adoption label; retrying on the next tick',
            errorFields(error),
          ),
        );
  }

  /** The node's trusted affine blocks as the view knows them (the agent's writes laid over the watch). */
  #blocks(): IPAMBlock[] {
    const { state, view } = this.#o;
    return trustedAffine(view.lastKnown(nodeBlocksSelector(state.node)), state.pools(), state.node);
  }

  async #import(): Promise<AdoptionCounts> {
    const { state, view, store, network, log, lifecycle } = this.#o;
    const node = state.node;
    const { files, unreadable } = await readStoreFiles(store);
    const blocks = this.#blocks();
    const plan = planHostLocalImport({ node, network, files, unreadable, pods: state.pods(), blocks });
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
    this.#report(
      'host-local entries kept: a live pod holds them but they cannot be imported',
      plan.conflicts,
      'conflicts',
    );
    const identity = new Map<string, string>([
      ...files.map((f): [string, string] => [f.file, `${f.containerID}\r\n${f.ifname}`]),
      ...unreadable.map((u): [string, string] => [u.file, '']),
    ]);
    const pending = await this.#quarantine(plan, identity);
    const quarantined = (await readdir(quarantineDirOf(store)).catch(() => [] as string[])).length;
    const unaccounted = this.#unaccounted(new Set([...files, ...unreadable].map((f) => f.address)));
    this.#report(
      "pod addresses neither in host-local's store nor in a block: conflist held back (is --host-local-store the store of this network?)",
      unaccounted.map((why) => ({ file: '', why })),
      'unaccounted',
    );
    return {
      imported: plan.done.length + recorded.length,
      pending,
      quarantined,
      conflict: plan.conflicts.length,
      unaccounted: unaccounted.length,
    };
  }

  /**
   * The live pods' addresses on the node, inside its blocks, that neither a store entry nor an
   * allocation holds: with any, the store is not this network's (or host-local lost a file), and
   * blockipam's ADD could hand such an address out again.
   */
  #unaccounted(inStore: ReadonlySet<string>): string[] {
    const { state } = this.#o;
    const node = state.node;
    const blocks = this.#blocks();
    const missing: string[] = [];
    for (const pod of state.pods()) {
      if (pod.spec?.nodeName !== node || !isLivePod(pod) || pod.spec?.hostNetwork) continue;
      for (const address of podIPs(pod)) {
        const ip = parseIP(address);
        const block = ip && blocks.find((b) => cidrContains(cidrOf(b), ip));
        if (!ip || !block || inStore.has(address)) continue;
        const ordinal = ordinalOf(cidrOf(block), ip);
        if (ordinal === undefined || block.spec.allocations[ordinal] === undefined)
          missing.push(`${address} (pod ${pod.metadata.namespace ?? ''}/${pod.metadata.name})`);
      }
    }
    return missing.sort();
  }

  /** Logs `what` when its set of entries changed since the last pass (warn), or emptied (info). */
  #report(message: string, entries: readonly HostLocalQuarantine[], key: 'conflicts' | 'unaccounted'): void {
    const text = entries.map((e) => `${e.file} ${e.why}`).join('\n');
    if (text === this.#reported[key]) return;
    this.#reported[key] = text;
    const fields = {
      [F.node]: this.#o.state.node,
      count: entries.length,
      entries: entries.slice(0, 20).map((e) => e.why),
    };
    if (entries.length > 0) this.#o.log.warn(message, fields);
    else this.#o.log.info(`${key} resolved`, { [F.node]: this.#o.state.node });
  }

  /**
   * Releases what was recorded for a file its pod's DEL removed meanwhile (that DEL found nothing
   * yet): the file is gone, or now holds another container.
   */
  async #undoGone(plan: HostLocalImportPlan, recorded: readonly string[]): Promise<void> {
    const { state, view, store, log } = this.#o;
    for (const i of plan.imports.filter((x) => recorded.includes(x.file))) {
      const now = parseHostLocalFile(i.file, (await readRecord(join(store, i.file))) ?? '');
      if (now && handleOf(this.#o.network, now.containerID, now.ifname) === i.owner.handle) continue;
      await releaseByHandle(view, i.owner.handle, { node: state.node });
      log.info('imported address released again: its file went meanwhile', {
        [F.node]: state.node,
        address: i.address,
        handle: i.owner.handle,
      });
    }
  }

  /**
   * Moves each entry no live pod held for the grace period aside — only if it still holds what
   * the plan read (a DEL and an ADD may have replaced it meanwhile) — under a name no earlier
   * quarantine used.
   * @param identity each entry's content as read (`containerID\r\nifname`, '' for no valid record)
   * @returns the entries still waiting out the grace period
   */
  async #quarantine(plan: HostLocalImportPlan, identity: ReadonlyMap<string, string>): Promise<number> {
    const { store, graceMs, log, state } = this.#o;
    const now = this.#clock();
    const keyOf = (file: string): string => `${file}\u0000${identity.get(file) ?? ''}`;
    const waiting = new Set(plan.quarantine.map((q) => keyOf(q.file)));
    for (const key of [...this.#unmatched.keys()]) if (!waiting.has(key)) this.#unmatched.delete(key);
    let pending = 0;
    for (const q of plan.quarantine) {
      const key = keyOf(q.file);
      const since = this.#unmatched.get(key) ?? now;
      this.#unmatched.set(key, since);
      if (now - since < graceMs) {
        pending += 1;
        continue;
      }
      const source = join(store, q.file);
      const content = await readRecord(source);
      const record = parseHostLocalFile(q.file, content ?? '');
      const still = record ? `${record.containerID}\r\n${record.ifname}` : '';
      if (
        still !== identity.get(q.file) ||
        (content === undefined && record === undefined && !(await exists(source)))
      ) {
        this.#unmatched.delete(key);
        continue; // replaced or gone meanwhile: the next pass plans it afresh
      }
      const dir = quarantineDirOf(store);
      await mkdir(dir, { recursive: true, mode: 0o755 });
      const target = await unusedName(join(dir, q.file));
      await rename(source, target);
      this.#unmatched.delete(key);
      log.warn('host-local file quarantined', { [F.node]: state.node, [F.path]: target, why: q.why });
    }
    return pending;
  }
}

/** The file states the gauge reports. */
const FILE_STATES = ['imported', 'pending', 'quarantined', 'conflict', 'unaccounted'] as const;

const exists = (path: string): Promise<boolean> =>
  lstat(path).then(
    () => true,
    () => false,
  );

/** `target`, or `target.<n>` for the first n from 1 that no entry holds (the agent alone writes there). */
async function unusedName(target: string): Promise<string> {
  for (let n = 0; ; n++) {
    const name = n === 0 ? target : `${target}.${n}`;
    if (!(await exists(name))) return name;
  }
}
