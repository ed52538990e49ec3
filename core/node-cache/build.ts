/**
 * Building a node cache document from the objects a writer holds (the node agent's informers;
 * tests seed it from a real API server the same way). Pure: it keeps only what readers use. Of
 * pods and namespaces it keeps only the allocation annotations (../annotations.ts): the others
 * (kubectl's last-applied-configuration holds a whole pod spec) are none of the node's business.
 * Of the IPAM objects it drops only what costs bytes (managedFields).
 */
import { allocationAnnotationsOf } from '../annotations.ts';
import { nodeLabel } from '../block/labels.ts';
import type {
  IPAMBlock,
  IPAMConfigObject,
  IPPool,
  IPReservation,
  KubeObject,
  Namespace,
  Node,
  Pod,
} from '../resources.ts';
import { NODE_CACHE_KIND, NODE_CACHE_VERSION, podKey } from './document.ts';
import type { CachedNamespace, CachedPod, NodeCacheDocument } from './document.ts';

/** What {@link buildNodeCache} needs; objects as the API server returned them. */
export interface NodeCacheInput {
  /** metadata.uid of the kube-system Namespace. */
  readonly clusterUID: string;
  /** The node (its name, uid and labels are kept). */
  readonly node: Node;
  readonly heartbeatAtMs: number;
  readonly generation: number;
  readonly writer: { readonly name: string; readonly pid: number };
  /** Blocks of the node; blocks without the node's label are dropped. */
  readonly blocks: readonly IPAMBlock[];
  readonly config: IPAMConfigObject | null | undefined;
  readonly pools: readonly IPPool[];
  readonly reservations: readonly IPReservation[];
  /** Pods; those not bound to this node (spec.nodeName) are dropped, and all but the allocation annotations. */
  readonly pods: readonly Pod[];
  /** Namespaces; only those of kept pods are kept, with their labels and allocation annotations. */
  readonly namespaces: readonly Namespace[];
}

/** The object without metadata.managedFields (the API server's field ownership bookkeeping). */
function lean<T extends KubeObject>(object: T): T {
  const metadata = object.metadata as T['metadata'] & { managedFields?: unknown };
  if (metadata.managedFields === undefined) return object;
  const { managedFields: _dropped, ...rest } = metadata;
  return { ...object, metadata: rest };
}

/** The document for `input.node`. */
export function buildNodeCache(input: NodeCacheInput): NodeCacheDocument {
  const name = input.node.metadata.name;
  const label = nodeLabel(name);
  const pods: Record<string, CachedPod> = {};
  for (const pod of input.pods) {
    if (pod.spec?.nodeName !== name || !pod.metadata.namespace || !pod.metadata.uid) continue;
    pods[podKey(pod.metadata.namespace, pod.metadata.name)] = {
      uid: pod.metadata.uid,
      nodeName: name,
      annotations: allocationAnnotationsOf(pod.metadata.annotations),
    };
  }
  const wanted = new Set(Object.keys(pods).map((key) => key.slice(0, key.indexOf('/'))));
  const namespaces: Record<string, CachedNamespace> = {};
  for (const ns of input.namespaces) {
    if (!wanted.has(ns.metadata.name)) continue;
    namespaces[ns.metadata.name] = {
      uid: ns.metadata.uid ?? '',
      labels: ns.metadata.labels ?? {},
      annotations: allocationAnnotationsOf(ns.metadata.annotations),
    };
  }
  return {
    kind: NODE_CACHE_KIND,
    version: NODE_CACHE_VERSION,
    cluster: { uid: input.clusterUID },
    node: { name, uid: input.node.metadata.uid ?? '', labels: input.node.metadata.labels ?? {} },
    heartbeatAtMs: input.heartbeatAtMs,
    generation: input.generation,
    writer: input.writer,
    blocks: input.blocks.filter((b) => b.metadata.labels?.[label] !== undefined).map(lean),
    config: input.config ? lean(input.config) : null,
    pools: input.pools.map(lean),
    reservations: input.reservations.map(lean),
    pods,
    namespaces,
  };
}
