/**
 * What the agent knows, kept current by watches (block-controller/shared/informer.ts), one per
 * kind, none of which grows with the cluster's pods (docs/design-agent.md §Watch budget): this
 * node's IPAMBlocks (label selector core's nodeBlocksSelector: affine, or holding its borrowed
 * addresses), its own Node (field selector metadata.name), every IPAMNode (the route source the
 * controller writes, one small object per node), IPPools, IPAMConfigs, IPReservations,
 * Namespaces (the pods' annotations and labels),
 * and the Pods bound to this node (field selector spec.nodeName). Nothing acts before `synced`:
 * an empty cache means "not read yet", never "nothing there".
 */
import {
  API_VERSION,
  IPAM_CONFIG_NAME,
  nodeBlocksSelector,
  selectorToQuery,
  trustedAffine,
} from 'blockipam/core';
import type {
  IPAMBlock,
  IPAMConfigObject,
  IPAMNode,
  IPPool,
  IPReservation,
  Namespace,
  Node,
  Pod,
} from 'blockipam/core';
import { watchKind } from '../shared/index.ts';
import type { DaemonMetrics, KubeConnection, Logger, WatchedKind, WatchEvent } from '../shared/index.ts';

const GROUP = `/apis/${API_VERSION}`;

/** Which watch an event came from. */
export type Kind =
  'blocks' | 'pools' | 'configs' | 'reservations' | 'node' | 'ipamnodes' | 'namespaces' | 'pods';

export type StateListener = (kind: Kind, event: WatchEvent, object: { metadata: { name: string } }) => void;

/** A Node with the fields the agent reads (labels, InternalIPs). */
export interface NodeObject extends Node {
  status?: { addresses?: { type: string; address: string }[] };
}

export class AgentState {
  readonly node: string;
  readonly #watches: Record<Kind, WatchedKind<never>>;
  readonly #listeners: StateListener[];

  private constructor(node: string, watches: Record<Kind, WatchedKind<never>>, listeners: StateListener[]) {
    this.node = node;
    this.#watches = watches;
    this.#listeners = listeners;
  }

  /**
   * Starts the eight watches (in parallel) and resolves once each has tried its first LIST;
   * failed ones keep retrying (see `synced`).
   */
  static async start(options: {
    node: string;
    connection: KubeConnection;
    log: Logger;
    metrics: DaemonMetrics;
  }): Promise<AgentState> {
    const listeners: StateListener[] = [];
    const paths: Record<Kind, { path: string; fieldSelector?: string; labelSelector?: string }> = {
      blocks: {
        path: `${GROUP}/ipamblocks`,
        labelSelector: selectorToQuery(nodeBlocksSelector(options.node)),
      },
      pools: { path: `${GROUP}/ippools` },
      configs: { path: `${GROUP}/ipamconfigs` },
      reservations: { path: `${GROUP}/ipreservations` },
      node: { path: '/api/v1/nodes', fieldSelector: `metadata.name=${options.node}` },
      ipamnodes: { path: `${GROUP}/ipamnodes` },
      namespaces: { path: '/api/v1/namespaces' },
      pods: { path: '/api/v1/pods', fieldSelector: `spec.nodeName=${options.node}` },
    };
    const entries = await Promise.all(
      (Object.entries(paths) as [Kind, (typeof paths)[Kind]][]).map(async ([kind, selected]) => {
        const watch = await watchKind<never>({
          resource: kind,
          ...selected,
          kubeConfig: options.connection.kubeConfig,
          transport: options.connection.transport,
          log: options.log,
          metrics: options.metrics,
          onEvent: (event, object) => {
            for (const listener of listeners) listener(kind, event, object);
          },
        });
        return [kind, watch] as const;
      }),
    );
    return new AgentState(
      options.node,
      Object.fromEntries(entries) as Record<Kind, WatchedKind<never>>,
      listeners,
    );
  }

  /** Calls `listener` after every change of any watched object. */
  onChange(listener: StateListener): void {
    this.#listeners.push(listener);
  }

  /** The watch of this node's blocks has listed and is connected (its view is current). */
  get nodeBlocksCurrent(): boolean {
    return this.#watches.blocks.synced && this.#watches.blocks.connected;
  }

  /** Every watch has listed at least once. */
  get synced(): boolean {
    return Object.values(this.#watches).every((w) => w.synced);
  }

  /** Every watch is connected (no error pending). */
  get connected(): boolean {
    return Object.values(this.#watches).every((w) => w.connected);
  }

  /** Names of the watches whose last (re)start failed or that failed since (readiness reasons). */
  get disconnected(): Kind[] {
    return (Object.entries(this.#watches) as [Kind, WatchedKind<never>][])
      .filter(([, w]) => !w.connected)
      .map(([kind]) => kind);
  }

  /** Names of the watches not synced yet (readiness reasons). */
  get unsynced(): Kind[] {
    return (Object.entries(this.#watches) as [Kind, WatchedKind<never>][])
      .filter(([, w]) => !w.synced)
      .map(([kind]) => kind);
  }

  #list<T>(kind: Kind): readonly T[] {
    return this.#watches[kind].list();
  }

  /** Blocks carrying this node's label: affine, or holding addresses it borrowed (the watch's selection). */
  nodeBlocks(): readonly IPAMBlock[] {
    return this.#list<IPAMBlock>('blocks');
  }

  /**
   * Blocks affine to this node by their spec and trusted (core's trustedAffine, judged over this
   * node's blocks: rules 1–5 in full; overlap with another node's block is the controller's
   * verdict, which keeps such a block out of every IPAMNode): a block merely labelled affine to
   * this node is not its own.
   */
  affineBlocks(): IPAMBlock[] {
    return trustedAffine(this.nodeBlocks(), this.pools(), this.node);
  }

  /** Every IPAMNode (the route source, docs/design-controller.md §IPAMNode). */
  ipamNodes(): readonly IPAMNode[] {
    return this.#list<IPAMNode>('ipamnodes');
  }

  pools(): readonly IPPool[] {
    return this.#list<IPPool>('pools');
  }

  /** IPAMConfig `default`, or undefined (defaults apply). */
  config(): IPAMConfigObject | undefined {
    return this.#watches.configs.get(IPAM_CONFIG_NAME);
  }

  reservations(): readonly IPReservation[] {
    return this.#list<IPReservation>('reservations');
  }

  /** This node's Node object (undefined until it is registered). */
  nodeObject(): NodeObject | undefined {
    return this.#watches.node.get(this.node);
  }

  namespaces(): readonly Namespace[] {
    return this.#list<Namespace>('namespaces');
  }

  /** Pods bound to this node. */
  pods(): readonly Pod[] {
    return this.#list<Pod>('pods');
  }

  /** A pod bound to this node, as watched (undefined: not seen, or not on this node). */
  pod(namespace: string, name: string): Pod | undefined {
    return this.#watches.pods.get(name, namespace);
  }

  /** A namespace, as watched. */
  namespace(name: string): Namespace | undefined {
    return this.#watches.namespaces.get(name);
  }

  /** Stops every watch. */
  async stop(): Promise<void> {
    await Promise.all(Object.values(this.#watches).map((w) => w.stop()));
  }
}
