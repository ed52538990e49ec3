/**
 * The ClusterView over watches (shared/informer.ts): pods, nodes, IPAMBlocks, IPPools,
 * IPReservations, IPAMConfigs and IPAMNodes, each LIST + WATCH. Started when this replica becomes leader
 * and stopped when it stops leading (a standby replica puts no watch load on the API server).
 * Every event calls `onChange` (the pass scheduler's trigger).
 */
import { API_VERSION, IPAM_CONFIG_NAME } from 'blockipam/core';
import type { IPAMBlock, IPAMConfigObject, IPAMNode, IPPool, IPReservation, Namespace } from 'blockipam/core';
import { watchKind } from '../shared/index.ts';
import type { DaemonMetrics, KubeConnection, Logger, WatchedKind } from '../shared/index.ts';
import type { WatchedPod } from './gc/owners.ts';
import type { ClusterView, WatchedNode } from './view.ts';

export interface WatchedView extends ClusterView {
  stop(): Promise<void>;
}

/** Starts the seven watches; resolves when each has made its first LIST (or failed, then retries). */
export async function watchCluster(options: {
  connection: KubeConnection;
  log: Logger;
  metrics?: DaemonMetrics;
  onChange: () => void;
}): Promise<WatchedView> {
  const common = {
    kubeConfig: options.connection.kubeConfig,
    transport: options.connection.transport,
    log: options.log,
    metrics: options.metrics,
    onEvent: () => options.onChange(),
  };
  const crd = (plural: string): string => `/apis/${API_VERSION}/${plural}`;
  const [pods, namespaces, nodes, blocks, pools, reservations, configs, ipamNodes] = await Promise.all([
    watchKind<WatchedPod>({ ...common, resource: 'pods', path: '/api/v1/pods' }),
    watchKind<Namespace>({ ...common, resource: 'namespaces', path: '/api/v1/namespaces' }),
    watchKind<WatchedNode>({ ...common, resource: 'nodes', path: '/api/v1/nodes' }),
    watchKind<IPAMBlock>({ ...common, resource: 'ipamblocks', path: crd('ipamblocks') }),
    watchKind<IPPool>({ ...common, resource: 'ippools', path: crd('ippools') }),
    watchKind<IPReservation>({ ...common, resource: 'ipreservations', path: crd('ipreservations') }),
    watchKind<IPAMConfigObject>({ ...common, resource: 'ipamconfigs', path: crd('ipamconfigs') }),
    watchKind<IPAMNode>({ ...common, resource: 'ipamnodes', path: crd('ipamnodes') }),
  ]);
  const all: [string, WatchedKind<unknown>][] = [
    ['pods', pods],
    ['namespaces', namespaces],
    ['nodes', nodes],
    ['ipamblocks', blocks],
    ['ippools', pools],
    ['ipreservations', reservations],
    ['ipamconfigs', configs],
    ['ipamnodes', ipamNodes],
  ];
  return {
    notReady() {
      const waiting = all.filter(([, kind]) => !kind.synced || !kind.connected).map(([name]) => name);
      return waiting.length === 0 ? undefined : `watches not synced or failing: ${waiting.join(', ')}`;
    },
    pods: () => pods.list(),
    namespaceAnnotations: (name) => namespaces.get(name)?.metadata.annotations,
    nodeNames: () => nodes.list().map((n) => n.metadata.name),
    nodes: () => nodes.list(),
    ipamNodes: () => ipamNodes.list(),
    blocks: () => blocks.list(),
    pools: () => pools.list(),
    reservations: () => reservations.list(),
    config: () => configs.get(IPAM_CONFIG_NAME),
    async stop() {
      await Promise.all(all.map(([, kind]) => kind.stop()));
    },
  };
}
