/**
 * The Datastore port: the only way from the core to the outside. Two
 * implementations: memory.ts (tests, simulations, benchmarks) and kube.ts (the Kubernetes API
 * server over the lean transport in core/kube/). Both pass the one contract suite in
 * test/core/datastore-contract.ts, so the memory store behaves like the real API server.
 *
 * Errors (core/errors/): NotFoundError, AlreadyExistsError, ConflictError, UnavailableError,
 * InvalidError, ExpiredError (a stale continue token), ApiError. Objects returned are fresh copies the caller may mutate; objects
 * passed in are never mutated.
 */
import type {
  IPAMBlock,
  IPAMConfigObject,
  IPPool,
  IPReservation,
  KubeObject,
  LabelSelector,
  Namespace,
  Node,
  ObjectMeta,
  Pod,
} from '../resources.ts';

/** Preconditions of a delete (Kubernetes DeleteOptions.preconditions). */
export interface DeletePreconditions {
  resourceVersion?: string;
  uid?: string;
}

/**
 * Options every call takes. `signal`: when it has fired, the call starts nothing and rejects
 * with `signal.reason`; a request in flight is abandoned (a write already sent may still land
 * on the server — it was sent before the signal fired). Default: no signal.
 */
export interface CallOptions {
  signal?: AbortSignal;
}

/** Options of a LIST. */
export interface ListOptions extends CallOptions {
  /** Only objects whose labels match. */
  labelSelector?: LabelSelector;
  /**
   * May be served from the API server's watch cache as it is, without the freshness check of a
   * consistent LIST (Kubernetes: `resourceVersion=0`): possibly behind by the cache's lag
   * (milliseconds), but never waiting. A consistent LIST of a kind nobody wrote lately waits
   * for etcd's progress notification after any write elsewhere — measured 60–65 ms in 4 of 6
   * tries here. Default false. Only for reads whose staleness is already accepted (the
   * plugin's snapshot of pools and reservations); never for block reads a decision rests on.
   */
  cached?: boolean;
}

/**
 * One page of a paged LIST (Kubernetes `limit` + `continue`, API concepts "Retrieving large
 * results sets in chunks"). The first page (no `continue`) is served at the latest
 * resourceVersion; every later page at the first page's, so the pages together are one
 * consistent LIST: an object created, changed or deleted after the first page does not change
 * what later pages hold.
 */
export interface PageOptions extends CallOptions {
  /** At most this many objects in the page; an integer ≥ 1. */
  limit: number;
  /**
   * The previous page's `continue`; absent for the first page. A token whose resourceVersion
   * has been compacted throws ExpiredError (410); a malformed one InvalidError (400).
   */
  continue?: string;
  /** Only objects whose labels match (the same on every page of one LIST). */
  labelSelector?: LabelSelector;
  /**
   * Told the page's `continue` (undefined: last page) as soon as it is known, before the page's
   * objects are decoded — so the next page can be asked for while this one is decoded (core's
   * `listAll` does). At most once per call; a store that cannot tell it early does not call it
   * (the Kubernetes one reads it from the answer's head, which precedes `items` in a built-in
   * kind's list). Never called when the call fails.
   */
  onContinue?: (token: string | undefined) => void;
}

/** A page of a LIST. */
export interface Page<T> {
  /** Sorted by name (pods: by namespace/name); at most `limit`, possibly fewer while more follow. */
  items: T[];
  /** The LIST's resourceVersion: the same on every page of one LIST. */
  resourceVersion: string;
  /** Token for the next page; undefined on the last page (the only end-of-list signal). */
  continue?: string;
}

/** CRUD on one cluster-scoped kind, with the API server's compare-and-swap semantics. */
export interface ResourceStore<T extends KubeObject> {
  /** The object, or undefined when it does not exist. */
  get(name: string, options?: CallOptions): Promise<T | undefined>;
  /** All objects (sorted by name) whose labels match. */
  list(options?: ListOptions): Promise<T[]>;
  /** Metadata only (name, labels, resourceVersion, uid …) — a cheaper LIST for large kinds. */
  listMetadata(options?: ListOptions): Promise<ObjectMeta[]>;
  /** One page of a LIST (full objects); see {@link PageOptions}. */
  listPage(options: PageOptions): Promise<Page<T>>;
  /**
   * Creates the object; the server sets uid, resourceVersion, creationTimestamp (a status
   * subresource's `status` is dropped, as the API server does).
   * @throws AlreadyExistsError when the name is taken; InvalidError when the schema refuses it
   */
  create(object: T, options?: CallOptions): Promise<T>;
  /**
   * Replaces the object. With `metadata.resourceVersion` set this is a compare-and-swap.
   * `status` of a kind with a status subresource is left as stored.
   * @throws ConflictError when the resourceVersion is stale; NotFoundError when it is gone
   */
  update(object: T, options?: CallOptions): Promise<T>;
  /**
   * Deletes the object; with preconditions only if they still hold.
   * @throws NotFoundError when it does not exist; ConflictError when a precondition fails
   */
  delete(name: string, preconditions?: DeletePreconditions, options?: CallOptions): Promise<void>;
}

/**
 * A kind with a status subresource (IPPool; IPAMBlock too, whose status only the controller
 * writes: KubeDatastore and MemoryDatastore give `blocks.updateStatus`, the port does not).
 */
export interface StatusResourceStore<T extends KubeObject> extends ResourceStore<T> {
  /** Replaces only `status` (compare-and-swap on resourceVersion when set). Same errors as update. */
  updateStatus(object: T, options?: CallOptions): Promise<T>;
}

/**
 * A Datastore whose blocks expose the status subresource (KubeDatastore, MemoryDatastore): what
 * the cluster controller needs for the blocks' Trusted condition. The port itself leaves it out,
 * so wrappers of the allocator's view of blocks need not implement it.
 */
export interface BlockStatusDatastore extends Datastore {
  readonly blocks: StatusResourceStore<IPAMBlock>;
}

/** Options of a pod LIST: the field selectors callers use, typed. */
export interface PodListOptions extends CallOptions {
  /** Only pods scheduled to this node (field selector `spec.nodeName`). */
  nodeName?: string;
  /**
   * Only pods whose primary IP (`status.podIP`, not `podIPs[1]`) is this address (field
   * selector `status.podIP`, exact text: canonical form).
   */
  podIP?: string;
  labelSelector?: LabelSelector;
}

/** Options of one page of a pod LIST. */
export type PodPageOptions = PageOptions & Omit<PodListOptions, keyof CallOptions>;

export interface Datastore {
  readonly pools: StatusResourceStore<IPPool>;
  readonly blocks: ResourceStore<IPAMBlock>;
  readonly configs: ResourceStore<IPAMConfigObject>;
  readonly reservations: ResourceStore<IPReservation>;
  /** Read-only views of built-in objects; undefined when absent. */
  getPod(namespace: string, name: string, options?: CallOptions): Promise<Pod | undefined>;
  getNamespace(name: string, options?: CallOptions): Promise<Namespace | undefined>;
  getNode(name: string, options?: CallOptions): Promise<Node | undefined>;
  listPods(options?: PodListOptions): Promise<Pod[]>;
  listNodes(options?: ListOptions): Promise<Node[]>;
  /** One page of a pod LIST (all namespaces; sorted by namespace/name). */
  listPodPage(options: PodPageOptions): Promise<Page<Pod>>;
  /** One page of a node LIST. */
  listNodePage(options: PageOptions): Promise<Page<Node>>;
}
