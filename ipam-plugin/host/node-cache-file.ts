/**
 * Reads the node agent's node cache file (docs/design-node-cache.md) and validates it with
 * core's decoder against this plugin's cluster and node. Never throws: an absent, unreadable,
 * oversized, corrupt, foreign or stale file is a reason, and the caller reads the API server
 * instead. Cost: open + fstat + read and the decode (~2 ms for a 110-pod node in the Bun
 * executable: docs/benchmarks.md "Node cache transport"); no request once the cluster's UID is
 * remembered (cluster-identity.ts), one GET to learn it.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { decodeNodeCache, NODE_CACHE_MAX_BYTES } from 'blockipam/core';
import type { NodeCacheRejection, NodeCacheDocument } from 'blockipam/core';
import { learnClusterUID, rememberedClusterUID, type ClusterIdentityOptions } from './cluster-identity.ts';

/**
 * Why the plugin did not use the node cache: core's reasons, or `Disabled`
 * (`nodeCacheMaxAgeMs: 0`), `Absent` (no file), `Unreadable` (I/O error), `NoCluster` (the
 * cluster's UID could not be learnt).
 */
export type NodeCacheMiss = NodeCacheRejection | 'Absent' | 'Unreadable' | 'Disabled' | 'NoCluster';

export type NodeCacheRead =
  | { readonly ok: true; readonly cache: NodeCacheDocument; readonly ageMs: number }
  | { readonly ok: false; readonly reason: NodeCacheMiss; readonly message: string };

export interface NodeCacheReadOptions {
  readonly file: string;
  readonly node: string;
  /** 0: disabled. */
  readonly maxAgeMs: number;
  readonly identity: ClusterIdentityOptions;
  /** The kube-system Namespace's UID from the API server (one GET). */
  readonly readClusterUID: () => Promise<string | undefined>;
  readonly now?: () => number;
}

/** The file's text (at most NODE_CACHE_MAX_BYTES), or why not. */
function readText(path: string): { text: string } | Extract<NodeCacheRead, { ok: false }> {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const size = fstatSync(fd).size;
    if (size > NODE_CACHE_MAX_BYTES)
      return { ok: false, reason: 'TooLarge', message: `node cache ${path}: ${size} bytes` };
    const buffer = Buffer.allocUnsafe(size);
    let at = 0;
    for (let n = -1; at < size && n !== 0; at += n) n = readSync(fd, buffer, at, size - at, at);
    return { text: buffer.toString('utf8', 0, at) };
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT'
      ? { ok: false, reason: 'Absent', message: `node cache ${path}: no such file` }
      : { ok: false, reason: 'Unreadable', message: `node cache ${path}: ${(e as Error).message}` };
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Reads and validates the node cache. The cluster UID is the remembered one; when none is
 * remembered, or the document names another cluster, it is learnt from the API server first.
 */
export async function readNodeCache(o: NodeCacheReadOptions): Promise<NodeCacheRead> {
  if (o.maxAgeMs === 0) return { ok: false, reason: 'Disabled', message: 'nodeCacheMaxAgeMs is 0' };
  const read = readText(o.file);
  if (!('text' in read)) return read;
  const now = o.now ?? Date.now;
  const decode = (clusterUID: string): ReturnType<typeof decodeNodeCache> =>
    decodeNodeCache(read.text, { clusterUID, node: o.node, nowMs: now(), maxAgeMs: o.maxAgeMs });
  const remembered = rememberedClusterUID(o.identity);
  const first = remembered === undefined ? undefined : decode(remembered);
  if (first && (first.ok || first.reason !== 'Cluster')) return first;
  let learnt: string | undefined;
  try {
    learnt = await learnClusterUID(o.identity, o.readClusterUID);
  } catch (e) {
    return { ok: false, reason: 'NoCluster', message: `kube-system namespace: ${(e as Error).message}` };
  }
  if (learnt === undefined)
    return { ok: false, reason: 'NoCluster', message: 'the kube-system namespace has no UID' };
  return decode(learnt);
}
