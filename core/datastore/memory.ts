/**
 * In-memory Datastore with the API server's semantics (proved by the contract suite in
 * test/core/datastore-contract.ts): resourceVersion compare-and-swap, delete preconditions,
 * NotFound / AlreadyExists / Conflict, status subresource on pools and blocks, no-op updates keep the
 * resourceVersion, LIST sorted by name. Built-in objects (pods, namespaces, nodes) are seeded from
 * plain objects and read-only. Labels are indexed, so a LIST by label does not scan every object
 * (a pool with blocks for 10,000 nodes stays cheap to query).
 */
import { matchesSelector } from '../selector.ts';
import {
  byName,
  type IPAMBlock,
  type IPAMConfigObject,
  type IPPool,
  type IPReservation,
  type IPAMNode,
  type KubeObject,
  type Namespace,
  type Node,
  type Pod,
} from '../resources.ts';
import type {
  CallOptions,
  Datastore,
  ListOptions,
  Page,
  PageOptions,
  PodListOptions,
  PodPageOptions,
} from './datastore.ts';
import { MemoryPager } from './memory-pager.ts';
import { MemoryResourceStore, settle } from './memory-store.ts';
import type { MemoryStats } from './memory-store.ts';

export type { MemoryStats } from './memory-store.ts';

/** Plain objects a memory datastore starts with. */
export interface MemorySeed {
  pools?: IPPool[];
  blocks?: IPAMBlock[];
  configs?: IPAMConfigObject[];
  reservations?: IPReservation[];
  pods?: Pod[];
  namespaces?: Namespace[];
  nodes?: Node[];
}

/**
 * A Datastore held in memory.
 * @param seed initial objects (CRs get uid/resourceVersion; built-ins are read-only)
 * @param options.clock ms since epoch for creationTimestamp; default Date.now
 */
export class MemoryDatastore implements Datastore {
  readonly stats: MemoryStats = { reads: 0, writes: 0, listed: 0 };
  readonly pools: MemoryResourceStore<IPPool>;
  readonly blocks: MemoryResourceStore<IPAMBlock>;
  readonly configs: MemoryResourceStore<IPAMConfigObject>;
  readonly reservations: MemoryResourceStore<IPReservation>;
  /** IPAMNodes (not in the Datastore port, as KubeDatastore's `ipamNodes`). */
  readonly ipamNodes: MemoryResourceStore<IPAMNode>;
  readonly #pods: Pod[];
  readonly #namespaces: Namespace[];
  readonly #nodes: Node[];
  readonly #pager = new MemoryPager();
  readonly #revision: () => string;

  constructor(seed: MemorySeed = {}, options: { clock?: () => number } = {}) {
    let revision = 1000;
    this.#revision = () => String(revision);
    const shared = {
      revision: { next: () => String(++revision), current: this.#revision },
      stats: this.stats,
      clock: options.clock ?? Date.now,
      pager: this.#pager,
    };
    const store = <T extends KubeObject>(kind: string, hasStatus: boolean, objects: T[] = []) => {
      const made = new MemoryResourceStore<T>(kind, { ...shared, hasStatus });
      for (const object of objects) made.seed(object);
      return made;
    };
    this.pools = store('ippools', true, seed.pools);
    this.blocks = store('ipamblocks', true, seed.blocks);
    this.configs = store('ipamconfigs', false, seed.configs);
    this.reservations = store('ipreservations', false, seed.reservations);
    this.ipamNodes = store<IPAMNode>('ipamnodes', false);
    this.#pods = structuredClone(seed.pods ?? []);
    this.#namespaces = structuredClone(seed.namespaces ?? []);
    this.#nodes = structuredClone(seed.nodes ?? []);
  }

  async getPod(namespace: string, name: string, options: CallOptions = {}): Promise<Pod | undefined> {
    await settle(this.stats, 'reads', options.signal);
    return copyOf(
      this.#pods.find((pod) => pod.metadata.namespace === namespace && pod.metadata.name === name),
    );
  }

  async getNamespace(name: string, options: CallOptions = {}): Promise<Namespace | undefined> {
    await settle(this.stats, 'reads', options.signal);
    return copyOf(this.#namespaces.find((namespace) => namespace.metadata.name === name));
  }

  async getNode(name: string, options: CallOptions = {}): Promise<Node | undefined> {
    await settle(this.stats, 'reads', options.signal);
    return copyOf(this.#nodes.find((node) => node.metadata.name === name));
  }

  async listPods(options: PodListOptions = {}): Promise<Pod[]> {
    await settle(this.stats, 'reads', options.signal);
    return structuredClone(this.#selectPods(options));
  }

  async listPodPage(options: PodPageOptions): Promise<Page<Pod>> {
    await settle(this.stats, 'reads', options.signal);
    return this.#pager.page('LIST pods', options, () => ({
      items: this.#selectPods(options),
      resourceVersion: this.#revision(),
    }));
  }

  async listNodePage(options: PageOptions): Promise<Page<Node>> {
    await settle(this.stats, 'reads', options.signal);
    return this.#pager.page('LIST nodes', options, () => ({
      items: this.#selectNodes(options),
      resourceVersion: this.#revision(),
    }));
  }

  /**
   * Drops every paged LIST's snapshot, as etcd compaction does: every outstanding continue token
   * is then ExpiredError (410). For tests of a caller's restart.
   */
  compact(): void {
    this.#pager.compact();
  }

  /** Pods matching the options' selectors, in the API server's order (by "namespace/name"). */
  #selectPods(options: PodListOptions): Pod[] {
    const { nodeName, podIP, labelSelector } = options;
    const key = (pod: Pod): string => `${pod.metadata.namespace ?? ''}/${pod.metadata.name}`;
    return this.#pods
      .filter(
        (pod) =>
          (nodeName === undefined || pod.spec?.nodeName === nodeName) &&
          (podIP === undefined || pod.status?.podIP === podIP) &&
          matchesSelector(labelSelector, pod.metadata.labels),
      )
      .sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  }

  #selectNodes(options: ListOptions): Node[] {
    return this.#nodes
      .filter((node) => matchesSelector(options.labelSelector, node.metadata.labels))
      .sort(byName);
  }

  async listNodes(options: ListOptions = {}): Promise<Node[]> {
    await settle(this.stats, 'reads', options.signal);
    return structuredClone(this.#selectNodes(options));
  }
}

function copyOf<T>(value: T | undefined): T | undefined {
  return value === undefined ? undefined : structuredClone(value);
}
