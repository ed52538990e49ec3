/**
 * Who owns an address, as the controller's watches see it (pure). An index over the watched pods
 * and nodes, built once per pass: pods by namespace/name, live pods by IP, node names.
 * Identity is handle + pod UID, never the pod name.
 */
import { isLivePod, podIPs } from 'blockipam/core';
import type { Pod } from 'blockipam/core';

/** The Pod fields the controller reads: core's Pod (`spec.hostNetwork` included). */
export type WatchedPod = Pod;

/** Owner look-ups for one pass. */
export interface OwnerIndex {
  /** The pod object of that name (any phase), or undefined. */
  pod(namespace: string, name: string): WatchedPod | undefined;
  /** Live pods reporting `address` (canonical text) in status.podIP(s). */
  ipUsers(address: string): readonly WatchedPod[];
  nodeExists(name: string): boolean;
}

/** The one liveness rule and pod-IP reading (core's, shared with CNI GC and ipamctl). */
export { isLivePod, podIPs };

/** Builds the index from the watched pods and node names. Cost: O(pods). */
export function ownerIndex(pods: readonly WatchedPod[], nodeNames: Iterable<string>): OwnerIndex {
  const byName = new Map<string, WatchedPod>();
  const byIP = new Map<string, WatchedPod[]>();
  for (const pod of pods) {
    byName.set(`${pod.metadata.namespace ?? ''}/${pod.metadata.name}`, pod);
    if (!isLivePod(pod)) continue;
    for (const ip of podIPs(pod)) byIP.set(ip, [...(byIP.get(ip) ?? []), pod]);
  }
  const nodes = new Set(nodeNames);
  return {
    pod: (namespace, name) => byName.get(`${namespace}/${name}`),
    ipUsers: (address) => byIP.get(address) ?? [],
    nodeExists: (name) => nodes.has(name),
  };
}
