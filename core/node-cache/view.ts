/**
 * Reading a decoded node cache document: the pool snapshot, a pod, a namespace. Pure. Keys are
 * looked up as own properties only (a pod named `constructor` or `__proto__` is data).
 */
import { snapshotOf } from '../allocator/pools.ts';
import type { PoolSnapshot } from '../allocator/pools.ts';
import { podKey } from './document.ts';
import type { CachedNamespace, CachedPod, NodeCacheDocument } from './document.ts';

/** The document's pool snapshot, dated at its heartbeat. */
export function cacheSnapshot(document: NodeCacheDocument): PoolSnapshot {
  return snapshotOf(document, document.heartbeatAtMs);
}

/** The cached pod `<namespace>/<name>`, if the writer knew it. */
export function cachedPodOf(
  document: NodeCacheDocument,
  namespace: string,
  name: string,
): CachedPod | undefined {
  const key = podKey(namespace, name);
  return Object.hasOwn(document.pods, key) ? document.pods[key] : undefined;
}

/** The cached namespace, if one of the node's pods lives in it. */
export function cachedNamespaceOf(document: NodeCacheDocument, name: string): CachedNamespace | undefined {
  return Object.hasOwn(document.namespaces, name) ? document.namespaces[name] : undefined;
}
