/**
 * A view of a Datastore whose every call carries one AbortSignal (core's allocator binds the
 * caller's `signal` this way, so no call site can forget it): a call made after the signal has
 * fired starts nothing and rejects with `signal.reason` — checked here too, so this holds even
 * over an implementation (a caller's view) that drops the options — and a call in flight is
 * abandoned by the implementation (see CallOptions). A signal passed to a single call wins over
 * the bound one.
 */
import type {
  CallOptions,
  Datastore,
  ListOptions,
  PageOptions,
  PodListOptions,
  PodPageOptions,
  ResourceStore,
} from './datastore.ts';
import type { KubeObject } from '../resources.ts';

/** Calls `send` with `options` plus the signal; rejects (never throws) when it has fired. */
function bound<O extends CallOptions, R>(
  signal: AbortSignal,
  options: O | undefined,
  send: (options: O) => Promise<R>,
): Promise<R> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return send({ signal, ...options } as O);
}

function bindStore<T extends KubeObject>(store: ResourceStore<T>, signal: AbortSignal): ResourceStore<T> {
  return {
    get: (name, options) => bound(signal, options, (o) => store.get(name, o)),
    list: (options?: ListOptions) => bound(signal, options, (o) => store.list(o)),
    listMetadata: (options?: ListOptions) => bound(signal, options, (o) => store.listMetadata(o)),
    listPage: (options: PageOptions) => bound(signal, options, (o) => store.listPage(o)),
    create: (object, options) => bound(signal, options, (o) => store.create(object, o)),
    update: (object, options) => bound(signal, options, (o) => store.update(object, o)),
    delete: (name, pre, options) => bound(signal, options, (o) => store.delete(name, pre, o)),
  };
}

/**
 * `p`, or a rejection with `signal`'s reason as soon as it fires (already fired: at once) — the
 * one way core and the agent stop waiting on a signal. `p` runs on regardless (its rejection is
 * observed, never unhandled); `signal` undefined: `p` itself.
 */
export function abortable<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return p;
  if (signal.aborted) {
    p.catch(() => undefined);
    return Promise.reject(signal.reason as Error);
  }
  return new Promise((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** @returns `ds` itself when `signal` is undefined, else a view binding it to every call */
export function withSignal(ds: Datastore, signal: AbortSignal | undefined): Datastore {
  if (signal === undefined) return ds;
  const pools: Datastore['pools'] = {
    ...bindStore(ds.pools, signal),
    updateStatus: (object, options) => bound(signal, options, (o) => ds.pools.updateStatus(object, o)),
  };
  return {
    pools,
    blocks: bindStore(ds.blocks, signal),
    configs: bindStore(ds.configs, signal),
    reservations: bindStore(ds.reservations, signal),
    getPod: (namespace, name, options) => bound(signal, options, (o) => ds.getPod(namespace, name, o)),
    getNamespace: (name, options) => bound(signal, options, (o) => ds.getNamespace(name, o)),
    getNode: (name, options) => bound(signal, options, (o) => ds.getNode(name, o)),
    listPods: (options?: PodListOptions) => bound(signal, options, (o) => ds.listPods(o)),
    listNodes: (options?: ListOptions) => bound(signal, options, (o) => ds.listNodes(o)),
    listPodPage: (options: PodPageOptions) => bound(signal, options, (o) => ds.listPodPage(o)),
    listNodePage: (options: PageOptions) => bound(signal, options, (o) => ds.listNodePage(o)),
  } satisfies Datastore;
}
