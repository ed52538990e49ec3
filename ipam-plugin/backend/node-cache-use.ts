/**
 * What the plugin takes from a valid node cache (docs/design-node-cache.md "Reader rules"), each
 * a pure decision that answers "use this" or "read the API server instead" (undefined):
 * - the pod context of an ADD, when the cache knows the pod with the UID the runtime gave and
 *   bound to this node (the checks a pod GET is made for), and its namespace;
 * - the pool snapshot and node labels (the snapshot cache's four reads);
 * - a Datastore view whose first LIST of the node's blocks is the cached blocks (their UPDATE
 *   carries the cached resourceVersion: a stale one costs one 409 and a re-read in core);
 * - whether DEL may release from the cached blocks (they hold the handle in every family the
 *   network assigns; otherwise the allocation may be newer than the cache);
 * - STATUS's "ready" when a cached own block has a free address or the pool provably has a
 *   block left to claim; anything else is decided on the API server's data.
 */
import {
  parseCidr,
  type IPFamily,
  poolBlockSize,
  poolCidr,
  type PoolSnapshot,
  capacityOf,
  cidrOf,
  POOL_LABEL,
  cachedNamespaceOf,
  cachedPodOf,
  cacheSnapshot,
  matchesSelector,
} from 'blockipam/core';
import type { Datastore, NodeCacheDocument, IPAMBlock, IPPool } from 'blockipam/core';
import { readAnnotations } from 'blockipam/core/node-ipam';
import type { PodRef } from 'blockipam/core';
import { servingFirstNodeList } from './prefetch.ts';

/** The pod-dependent inputs of an ADD, as the API path computes them. */
export interface CachedPodContext {
  readonly pod: { readonly namespace: string; readonly name: string; readonly uid?: string };
  readonly namespaceLabels: Record<string, string>;
  readonly pools: string[];
  /** Where `pools` came from (annotations.ts `poolsFrom`). */
  readonly poolsFrom?: string;
  readonly ips: string[];
}

/**
 * The pod context from the cache, or undefined (read the API server) when the cache does not
 * know the pod bound to this node with the runtime's UID, or its namespace. Annotations come from
 * `runtimeAnnotations` (runtimeConfig `io.kubernetes.cri.pod-annotations`) when given, else from
 * the cache. A malformed annotation is a problem, as on the API path.
 */
export function podContextFromCache(
  cache: NodeCacheDocument,
  pod: PodRef,
  node: string,
  runtimeAnnotations: Readonly<Record<string, string>> | undefined,
): CachedPodContext | { readonly problem: string } | undefined {
  const cached = cachedPodOf(cache, pod.namespace, pod.name);
  if (!cached || cached.nodeName !== node) return undefined;
  if (pod.uid !== undefined && pod.uid !== cached.uid) return undefined;
  const ns = cachedNamespaceOf(cache, pod.namespace);
  if (!ns) return undefined;
  const choice = readAnnotations(runtimeAnnotations ?? cached.annotations, ns.annotations);
  if ('problem' in choice) return choice;
  return {
    // The runtime's UID or none (never the cached pod's: it may be a newer pod of the name).
    pod: { namespace: pod.namespace, name: pod.name, ...(pod.uid !== undefined ? { uid: pod.uid } : {}) },
    namespaceLabels: { ...ns.labels },
    pools: [...choice.pools],
    ...(choice.poolsFrom ? { poolsFrom: choice.poolsFrom } : {}),
    ips: [...choice.ips],
  };
}

/** The cache's pool snapshot and node labels, in the snapshot cache's shape. */
export function inputsFromCache(cache: NodeCacheDocument): {
  snapshot: PoolSnapshot;
  nodeLabels: Readonly<Record<string, string>>;
  cached: true;
} {
  return { snapshot: cacheSnapshot(cache), nodeLabels: cache.node.labels, cached: true };
}

/** A view of `ds` whose first LIST of `node`'s blocks answers with the cached blocks. */
export function cachedBlocksView(ds: Datastore, cache: NodeCacheDocument, node: string): Datastore {
  return servingFirstNodeList(ds, node, Promise.resolve([...cache.blocks]));
}

/** True when the cached blocks hold `handle` in each of `families` (DEL may trust them). */
export function cacheHoldsHandle(
  cache: NodeCacheDocument,
  handle: string,
  families: readonly IPFamily[],
): boolean {
  return blocksHoldHandle(cache.blocks, handle, families);
}

/** Whether `blocks` hold an allocation of `handle` in every one of `families`. */
export function blocksHoldHandle(
  blocks: readonly IPAMBlock[],
  handle: string,
  families: readonly IPFamily[],
): boolean {
  const held = new Set<IPFamily>();
  for (const block of blocks)
    if (Object.values(block.spec.allocations).some((a) => a.handle === handle))
      held.add(cidrOf(block).family);
  return families.length > 0 && families.every((f) => held.has(f));
}

/**
 * STATUS from the cache: true when, for every family, a pool this node may use (usable,
 * nodeSelector matching; named in the config, else Automatic) has a free ordinal in a cached
 * block the node may allocate from, or a block left to claim by the pool's status (written by
 * the cluster controller; without it nothing is assumed). Undefined: ask the API server.
 */
export function statusFromCache(
  cache: NodeCacheDocument,
  node: string,
  families: readonly IPFamily[],
  configPools: readonly string[],
): true | undefined {
  const snapshot = cacheSnapshot(cache);
  const s = snapshot.settings;
  for (const family of families) {
    const pools = snapshot.usable.filter(
      (p) =>
        poolCidr(p).family === family &&
        matchesSelector(p.spec.nodeSelector, cache.node.labels) &&
        (configPools.length > 0
          ? configPools.includes(p.metadata.name) || configPools.includes(p.spec.cidr)
          : (p.spec.assignmentMode ?? 'Automatic') === 'Automatic'),
    );
    const room = (pool: IPPool): boolean => {
      const mine = cache.blocks.filter((b) => b.metadata.labels?.[POOL_LABEL] === pool.metadata.name);
      if (
        mine.some(
          (b) =>
            (b.spec.affinity === node || !s.strictAffinity) &&
            capacityOf(b) > Object.keys(b.spec.allocations).length,
        )
      )
        return true;
      const owned = mine.filter((b) => b.spec.affinity === node).length;
      const claimed = pool.status?.blocks;
      if (!s.autoAllocateBlocks || owned >= s.maxBlocksPerNode || claimed === undefined) return false;
      const cidr = parseCidr(pool.spec.cidr);
      return cidr !== undefined && BigInt(claimed) < 1n << BigInt(poolBlockSize(pool) - cidr.prefixLength);
    };
    if (!pools.some(room)) return undefined;
  }
  return true;
}
