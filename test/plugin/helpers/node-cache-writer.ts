/**
 * Writes a node cache file from the real API server's state, the way the node agent does (read
 * everything the document holds, build it with core, write it atomically) — so plugin tests can
 * run the cache path before, and independently of, the agent. Options spoil it on purpose.
 */
import { renameSync, writeFileSync } from 'node:fs';
import {
  buildNodeCache,
  encodeNodeCache,
  IPAM_CONFIG_NAME,
  nodeBlocksSelector,
  type Datastore,
  type Namespace,
  type NodeCacheDocument,
} from 'blockipam/core';

export interface CacheSpoilers {
  /** Stamp another cluster's UID. */
  readonly clusterUID?: string;
  /** Write it for another node name (the document's node.name). */
  readonly nodeName?: string;
  /** Heartbeat time, ms since epoch (default now). */
  readonly heartbeatAtMs?: number;
  /** Keep only the first `truncate` characters of the text. */
  readonly truncate?: number;
  /** Change the document before encoding it. */
  readonly edit?: (doc: NodeCacheDocument) => NodeCacheDocument;
}

/** Reads the node's state from `ds` and writes the cache document to `file`; returns it. */
export async function writeNodeCache(
  ds: Datastore,
  node: string,
  file: string,
  spoil: CacheSpoilers = {},
): Promise<NodeCacheDocument> {
  const [system, nodeObject, blocks, config, pools, reservations, pods] = await Promise.all([
    ds.getNamespace('kube-system'),
    ds.getNode(node),
    ds.blocks.list({ labelSelector: nodeBlocksSelector(node) }),
    ds.configs.get(IPAM_CONFIG_NAME),
    ds.pools.list(),
    ds.reservations.list(),
    ds.listPods({ nodeName: node }),
  ]);
  const names = [...new Set(pods.map((p) => p.metadata.namespace ?? ''))];
  const namespaces = (await Promise.all(names.map((n) => ds.getNamespace(n)))).filter(
    (n): n is Namespace => n !== undefined,
  );
  const built = buildNodeCache({
    clusterUID: spoil.clusterUID ?? system?.metadata.uid ?? '',
    node: nodeObject ?? { metadata: { name: node } },
    heartbeatAtMs: spoil.heartbeatAtMs ?? Date.now(),
    generation: 1,
    writer: { name: 'test-writer', pid: process.pid },
    blocks,
    config,
    pools,
    reservations,
    pods,
    namespaces,
  });
  const renamed = spoil.nodeName ? { ...built, node: { ...built.node, name: spoil.nodeName } } : built;
  const doc = spoil.edit ? spoil.edit(renamed) : renamed;
  const text = encodeNodeCache(doc);
  writeFileSync(`${file}.tmp`, spoil.truncate === undefined ? text : text.slice(0, spoil.truncate));
  renameSync(`${file}.tmp`, file);
  return doc;
}
