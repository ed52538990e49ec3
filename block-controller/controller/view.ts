/**
 * What the controller sees of the cluster: the watched pods, namespaces, nodes, blocks, pools,
 * reservations and IPAMConfig (watch caches, no per-pass LIST). The passes read only this; the
 * API server is read again only for the fresh re-check before a release.
 */
import type {
  AddressedNode,
  IPAMBlock,
  IPAMConfigObject,
  IPAMNode,
  IPPool,
  IPReservation,
} from 'blockipam/core';
import type { WatchedPod } from './gc/owners.ts';

export interface ClusterView {
  /** undefined when every watch has synced and none is failing; else why not (then: no pass). */
  notReady(): string | undefined;
  pods(): readonly WatchedPod[];
  /** A namespace's annotations (its `ipam.blockipam.io/ippools` default), undefined when not watched. */
  namespaceAnnotations(name: string): Readonly<Record<string, string>> | undefined;
  nodeNames(): readonly string[];
  /** The Nodes: name, uid (an IPAMNode's owner), labels and status.addresses (its InternalIPs). */
  nodes(): readonly WatchedNode[];
  /** The IPAMNodes as stored (the IPAMNode step's compare-and-swap base). */
  ipamNodes(): readonly IPAMNode[];
  blocks(): readonly IPAMBlock[];
  pools(): readonly IPPool[];
  reservations(): readonly IPReservation[];
  /** IPAMConfig "default", or undefined (defaults apply). */
  config(): IPAMConfigObject | undefined;
}

/** A Node as the controller reads it. */
export interface WatchedNode extends AddressedNode {
  readonly metadata: {
    readonly name: string;
    readonly uid?: string;
    /** Pools' nodeSelectors are matched against them (node headroom). */
    readonly labels?: Readonly<Record<string, string>>;
  };
  /** The podCIDRs kube-controller-manager gave the node (podCIDR pools' blocks). */
  readonly spec?: { readonly podCIDR?: string; readonly podCIDRs?: readonly string[] };
}
