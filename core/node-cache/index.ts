/**
 * The node cache format (docs/design-node-cache.md): the document the node agent writes for the
 * CNI plugin, and the pure functions to build, encode, decode + validate and read it.
 */
export {
  DEFAULT_NODE_CACHE_FILE,
  DEFAULT_NODE_CACHE_MAX_AGE_MS,
  NODE_CACHE_CLOCK_SKEW_MS,
  NODE_CACHE_HEARTBEAT_MS,
  NODE_CACHE_KIND,
  NODE_CACHE_MAX_BYTES,
  NODE_CACHE_VERSION,
  podKey,
} from './document.ts';
export type { CachedNamespace, CachedPod, NodeCacheDocument } from './document.ts';
export { buildNodeCache } from './build.ts';
export type { NodeCacheInput } from './build.ts';
export { decodeNodeCache, encodeNodeCache } from './codec.ts';
export type { NodeCacheDecoded, NodeCacheExpectation, NodeCacheRejection } from './codec.ts';
export { cacheSnapshot, cachedNamespaceOf, cachedPodOf } from './view.ts';
