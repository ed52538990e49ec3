/**
 * The node cache document (docs/design-node-cache.md): what the node agent knows of
 * one node, written to a node-local file for the CNI plugin, so that a warm ADD sends only the
 * block UPDATE and STATUS sends nothing. Plain data; encode / decode in codec.ts.
 *
 * Every object in it is as the API server returned it (resourceVersions included), so the
 * plugin's compare-and-swap writes stay exact: a block that changed since costs one 409 and a
 * re-read, never a wrong allocation.
 */
import type { AllocationAnnotations } from '../annotations.ts';
import type { IPAMBlock, IPAMConfigObject, IPPool, IPReservation } from '../resources.ts';

/** `kind` of every node cache document. */
export const NODE_CACHE_KIND = 'BlockipamNodeCache';

/**
 * Format version. Bump it on any change a reader of the previous version would misread (a
 * field renamed, a meaning changed); readers accept exactly their own version. Dropping entries
 * a reader never looks up (the pods' and namespaces' other annotations) is not such a change.
 */
export const NODE_CACHE_VERSION = 1;

/**
 * Default file the agent writes and the plugin reads (netconf `ipam.nodeCacheFile`); under
 * /var/run so a reboot never leaves an old cache behind (tmpfs on common hosts).
 */
export const DEFAULT_NODE_CACHE_FILE = '/var/run/blockipam/node-cache.json';

/**
 * Default maximum heartbeat age a reader accepts, ms. 20 s: four of the agent's 5 s heartbeats
 * ({@link NODE_CACHE_HEARTBEAT_MS}), so a busy node that delays one or two is still served from
 * the cache, while a dead or cut-off agent's data is trusted at most 20 s — about the pool
 * snapshot's own staleness bound (10 s TTL) plus a heartbeat or two.
 */
export const DEFAULT_NODE_CACHE_MAX_AGE_MS = 20_000;

/**
 * How often the writer refreshes `heartbeatAtMs` when nothing changed, ms. 5 s: the runtime's
 * STATUS poll interval (CNI 1.1.0, ~5 s), well inside the readers' 20 s default.
 */
export const NODE_CACHE_HEARTBEAT_MS = 5_000;

/**
 * A heartbeat this far in the future is accepted (clock stepped back a little between write
 * and read), ms; beyond it the document is refused as `Clock`. Writer and reader share the
 * host's clock, so more than this means the clock jumped, and age cannot be judged.
 */
export const NODE_CACHE_CLOCK_SKEW_MS = 5_000;

/**
 * Largest document a reader accepts, bytes (UTF-16 code units of the text). 16 MiB: a node holds
 * at most `maxBlocksPerNode` (default 20) affine blocks of < 32 KiB plus a few borrowed ones,
 * and ~110 pods with two short annotations at most — well under 2 MiB; anything near 16 MiB is not
 * a node cache, and parsing it would cost the plugin more than the reads it saves.
 */
export const NODE_CACHE_MAX_BYTES = 16 * 1024 * 1024;

/** A pod scheduled to the node: what the plugin checks and reads instead of a pod GET. */
export interface CachedPod {
  /** metadata.uid. */
  readonly uid: string;
  /** spec.nodeName (the writer keeps only pods bound to this node). */
  readonly nodeName: string;
  /**
   * The allocation annotations of metadata.annotations (core/annotations.ts), no other ({} when
   * none). An older agent's document (same version) holds the whole map; readers look up only
   * the allocation annotations, so both read alike.
   */
  readonly annotations: AllocationAnnotations;
}

/** A namespace of a cached pod: its selector labels and pool annotation. */
export interface CachedNamespace {
  readonly uid: string;
  readonly labels: Readonly<Record<string, string>>;
  /** The allocation annotations of metadata.annotations, as {@link CachedPod.annotations}. */
  readonly annotations: AllocationAnnotations;
}

/** The document, version {@link NODE_CACHE_VERSION}. */
export interface NodeCacheDocument {
  readonly kind: typeof NODE_CACHE_KIND;
  readonly version: typeof NODE_CACHE_VERSION;
  /** The cluster: `uid` = metadata.uid of the kube-system Namespace (as ipamctl's reports). */
  readonly cluster: { readonly uid: string };
  /** The node: its name (= the plugin's node name), Node UID, and labels (pool nodeSelectors). */
  readonly node: {
    readonly name: string;
    readonly uid: string;
    readonly labels: Readonly<Record<string, string>>;
  };
  /**
   * Last time (ms since epoch) the writer knew every part below current: all its watches
   * connected and synced. A writer whose watch is broken stops advancing it, so the document
   * ages out instead of serving data nobody is keeping current.
   */
  readonly heartbeatAtMs: number;
  /** Counts the writer's writes since it started (diagnostics: which write a reader used). */
  readonly generation: number;
  /** Who wrote it (diagnostics), e.g. `{name: "blockipam-agent", pid: 4242}`. */
  readonly writer: { readonly name: string; readonly pid: number };
  /**
   * Every IPAMBlock carrying this node's label (`node.ipam.blockipam.io/<key>`: affine, or
   * holding addresses it borrowed) — exactly what the allocator's first LIST of the node's
   * blocks returns — as stored, with metadata.resourceVersion.
   */
  readonly blocks: readonly IPAMBlock[];
  /** IPAMConfig `default`, or null when it does not exist (defaults apply). */
  readonly config: IPAMConfigObject | null;
  /** Every IPPool (with status, when the controller maintains it). */
  readonly pools: readonly IPPool[];
  /** Every IPReservation. */
  readonly reservations: readonly IPReservation[];
  /** Pods bound to this node, keyed `<namespace>/<name>`. */
  readonly pods: Readonly<Record<string, CachedPod>>;
  /** The namespaces of those pods, keyed by name. */
  readonly namespaces: Readonly<Record<string, CachedNamespace>>;
}

/** The key of a pod in {@link NodeCacheDocument.pods}. */
export function podKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}
