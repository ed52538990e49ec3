/**
 * Encoding and decoding the node cache document (docs/design-node-cache.md). Decoding is where
 * a reader decides whether to trust a cache: hostile or corrupt text, another format version,
 * another cluster or node, or a writer that stopped beating are refused with a typed reason — an
 * expected outcome (a value), never an exception — and the reader falls back to the API server.
 * Pure: the caller reads the file (or socket) and passes the text and the clock.
 */
import { nodeLabel } from '../block/labels.ts';
import {
  NODE_CACHE_CLOCK_SKEW_MS,
  NODE_CACHE_KIND,
  NODE_CACHE_MAX_BYTES,
  NODE_CACHE_VERSION,
} from './document.ts';
import type { NodeCacheDocument } from './document.ts';
import { documentProblem, isRecord } from './shape.ts';

/**
 * Why a document was refused:
 * - `TooLarge`: longer than {@link NODE_CACHE_MAX_BYTES};
 * - `Malformed`: not JSON (a truncated file lands here: its closing brace is missing), not a
 *   node cache, or a field of the wrong type (the message names the first one);
 * - `Version`: a node cache of another format version;
 * - `Cluster`: written for another cluster (kube-system Namespace UID differs);
 * - `Node`: written for another node (or it holds a block not tied to the node);
 * - `Stale`: the heartbeat is older than the reader's maximum age;
 * - `Clock`: the heartbeat is more than {@link NODE_CACHE_CLOCK_SKEW_MS} in the future.
 */
export type NodeCacheRejection =
  'TooLarge' | 'Malformed' | 'Version' | 'Cluster' | 'Node' | 'Stale' | 'Clock';

/** What the reader expects of the document. */
export interface NodeCacheExpectation {
  /** metadata.uid of the kube-system Namespace of the cluster the reader talks to. */
  readonly clusterUID: string;
  /** The reader's node name. */
  readonly node: string;
  /** The reader's clock, ms since epoch. */
  readonly nowMs: number;
  /** Oldest acceptable heartbeat age, ms (default DEFAULT_NODE_CACHE_MAX_AGE_MS). */
  readonly maxAgeMs: number;
}

/** The outcome of {@link decodeNodeCache}. */
export type NodeCacheDecoded =
  | { readonly ok: true; readonly cache: NodeCacheDocument; readonly ageMs: number }
  | { readonly ok: false; readonly reason: NodeCacheRejection; readonly message: string };

/** The document as text (JSON, one line). */
export function encodeNodeCache(document: NodeCacheDocument): string {
  return JSON.stringify(document);
}

function refuse(reason: NodeCacheRejection, message: string): NodeCacheDecoded {
  return { ok: false, reason, message };
}

/**
 * Parses and validates a document against what the reader expects. Checks, in order: size,
 * JSON, kind, version, every field's type, cluster, node (and that every block carries the
 * node's label), heartbeat age.
 * @returns the document and its age in ms, or the reason and a message naming the cause
 */
export function decodeNodeCache(text: string, expect: NodeCacheExpectation): NodeCacheDecoded {
  if (text.length > NODE_CACHE_MAX_BYTES)
    return refuse('TooLarge', `node cache: ${text.length} bytes, more than ${NODE_CACHE_MAX_BYTES}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    return refuse('Malformed', `node cache: not JSON (truncated?): ${(e as Error).message}`);
  }
  if (!isRecord(parsed) || parsed.kind !== NODE_CACHE_KIND)
    return refuse('Malformed', `node cache: kind: must be ${NODE_CACHE_KIND}`);
  if (parsed.version !== NODE_CACHE_VERSION)
    return refuse(
      'Version',
      `node cache: version ${JSON.stringify(parsed.version)}, this reader knows ${NODE_CACHE_VERSION}`,
    );
  const problem = documentProblem(parsed);
  if (problem) return refuse('Malformed', `node cache: ${problem}`);
  const document = parsed as unknown as NodeCacheDocument;
  if (document.cluster.uid !== expect.clusterUID)
    return refuse(
      'Cluster',
      `node cache: written for cluster ${document.cluster.uid}, this is cluster ${expect.clusterUID}`,
    );
  if (document.node.name !== expect.node)
    return refuse('Node', `node cache: written for node ${document.node.name}, this is node ${expect.node}`);
  const label = nodeLabel(expect.node);
  const stray = document.blocks.find((b) => b.metadata.labels?.[label] === undefined);
  if (stray)
    return refuse(
      'Node',
      `node cache: block ${stray.metadata.name} does not carry node ${expect.node}'s label`,
    );
  const ageMs = expect.nowMs - document.heartbeatAtMs;
  if (ageMs < -NODE_CACHE_CLOCK_SKEW_MS)
    return refuse('Clock', `node cache: heartbeat ${-ageMs} ms in the future`);
  if (ageMs > expect.maxAgeMs)
    return refuse('Stale', `node cache: heartbeat ${ageMs} ms old, more than ${expect.maxAgeMs} ms`);
  return { ok: true, cache: document, ageMs: Math.max(0, ageMs) };
}
