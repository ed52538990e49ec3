/**
 * The reads an allocation decides with, apart from the blocks (docs/design-core.md §Node IPAM
 * service): the pool snapshot, the node's labels, the pod and its namespace. The node agent serves
 * them from its watches (no request per ADD); the plugin's direct path reads them from the
 * datastore each time ({@link datastoreInputs}). The blocks themselves are always read by core's
 * allocator through the service's Datastore: every decision on them is a compare-and-swap.
 */
import { loadSnapshot, type PoolSnapshot } from '../allocator/pools.ts';
import type { Datastore } from '../datastore/datastore.ts';
import { withSignal } from '../datastore/with-signal.ts';
import type { Namespace, Pod } from '../resources.ts';

/** A value, or a promise of it: an implementation over a watch answers at once. */
type Awaitable<T> = T | Promise<T>;

/**
 * Each read takes the operation's signal; an implementation that sends a request must stop when
 * it fires (reject with `signal.reason`). A failure is thrown as core's errors (UnavailableError …).
 */
export interface NodeInputs {
  /**
   * Settings, pools and reservations (core's PoolSnapshot). A stale snapshot is safe for
   * uniqueness (every block write is a compare-and-swap); it can only delay a pool, reservation
   * or IPAMConfig change by its age.
   */
  snapshot(signal: AbortSignal): Awaitable<PoolSnapshot>;
  /** The labels of Node `node` (pool nodeSelectors); {} when the Node does not exist. */
  nodeLabels(node: string, signal: AbortSignal): Awaitable<Readonly<Record<string, string>>>;
  /**
   * The pod, or undefined when the API server does not know it (the service then allocates
   * without a pod reference: `podNotFound`). An implementation over a watch of its node's pods
   * must read the API server on a miss: a pod not (yet) in its view may exist, and one bound to
   * another node is outside the view by definition (the service refuses it as `misconfigured`).
   */
  pod(namespace: string, name: string, signal: AbortSignal): Awaitable<Pod | undefined>;
  /**
   * The pod read from the API server, for an implementation whose `pod` may answer from a watch:
   * asked when that answer's metadata.uid differs from the runtime's K8S_POD_UID (the watch may
   * still hold the predecessor of a recreated pod of the same name). Absent: `pod` reads the API
   * server already.
   */
  podFromServer?(namespace: string, name: string, signal: AbortSignal): Awaitable<Pod | undefined>;
  /** The namespace (labels for namespaceSelectors, its pools annotation), or undefined. */
  namespace(name: string, signal: AbortSignal): Awaitable<Namespace | undefined>;
}

/**
 * NodeInputs read from `ds` on every call: the snapshot with core's {@link loadSnapshot} (GET
 * IPAMConfig, LIST IPPools, LIST IPReservations), the node with a GET, pod and namespace with a
 * GET each. For the plugin's direct path (a process per call: nothing to keep).
 * @param clock ms since epoch, stamped on the snapshot; default Date.now
 */
export function datastoreInputs(ds: Datastore, clock: () => number = Date.now): NodeInputs {
  return {
    snapshot: (signal) => loadSnapshot(withSignal(ds, signal), clock()),
    nodeLabels: async (node, signal) => (await withSignal(ds, signal).getNode(node))?.metadata.labels ?? {},
    pod: (namespace, name, signal) => withSignal(ds, signal).getPod(namespace, name),
    namespace: (name, signal) => withSignal(ds, signal).getNamespace(name),
  };
}
