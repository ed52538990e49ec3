/**
 * The direct path's {@link Backend} over any core Datastore (Kubernetes in production: kube-backend.ts;
 * the memory datastore in unit tests): core's node IPAM service with `datastoreInputs(ds)` —
 * every call reads the node's blocks (one LIST), the snapshot, node, pod and namespace, and
 * writes with compare-and-swap. A dual-stack rollback that could not be written is kept for the
 * log line (`rollbackFailed` in {@link Backend.stats}).
 */
import type { Datastore, RollbackFailure } from 'blockipam/core';
import { createNodeIpam, datastoreInputs } from 'blockipam/core/node-ipam';
import type { Backend } from './port.ts';

export interface CoreBackendOptions {
  readonly ds: Datastore;
  /** Frees the datastore's connection. Default: nothing to free. */
  readonly close?: () => Promise<void>;
  /** Transport counters; merged into {@link Backend.stats}. */
  readonly stats?: () => Readonly<Record<string, unknown>>;
  /** {@link Backend.credentialNode}. */
  readonly credentialNode?: string;
}

export function createCoreBackend(o: CoreBackendOptions): Backend {
  /** Addresses a failed dual-stack rollback left allocated (logged with the outcome). */
  const rollbackFailed: string[] = [];
  const onRollbackFailure = (f: RollbackFailure): void => {
    rollbackFailed.push(`${f.handle}: ${f.addresses.join(', ')} left allocated: ${f.error.message}`);
  };
  return {
    ipam: createNodeIpam({ ds: o.ds, inputs: datastoreInputs(o.ds), allocator: { onRollbackFailure } }),
    ...(o.credentialNode === undefined ? {} : { credentialNode: o.credentialNode }),
    close: () => o.close?.() ?? Promise.resolve(),
    stats: () => ({ ...o.stats?.(), ...(rollbackFailed.length > 0 ? { rollbackFailed } : {}) }),
  };
}
