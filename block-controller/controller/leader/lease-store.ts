/**
 * A Lease object read and written through core's transport (counted in
 * blockipam_api_requests_total, typed errors: ConflictError on a stale resourceVersion,
 * AlreadyExistsError when a racing candidate created it first).
 */
import type { KubeTransport } from 'blockipam/core/kube';
import { isNotFound } from 'blockipam/core';
import type { Lease, LeaseSpec } from './lease.ts';

/** The port the elector uses (a fake in unit tests). */
export interface LeaseStore {
  /** The lease, or undefined when it does not exist. */
  get(): Promise<Lease | undefined>;
  /** @throws AlreadyExistsError */
  create(spec: LeaseSpec): Promise<Lease>;
  /** Compare-and-swap on `resourceVersion`. @throws ConflictError, NotFoundError */
  update(resourceVersion: string, spec: LeaseSpec): Promise<Lease>;
}

/** The Lease `namespace/name` on the API server. */
export function kubeLeaseStore(transport: KubeTransport, namespace: string, name: string): LeaseStore {
  const collection = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`;
  const path = `${collection}/${encodeURIComponent(name)}`;
  const object = (spec: LeaseSpec, resourceVersion?: string): Lease => ({
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name, namespace, ...(resourceVersion === undefined ? {} : { resourceVersion }) },
    spec,
  });
  return {
    async get() {
      try {
        return await transport.request<Lease>('GET', path);
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw error;
      }
    },
    create: (spec) => transport.request<Lease>('POST', collection, { body: object(spec) }),
    update: (resourceVersion, spec) =>
      transport.request<Lease>('PUT', path, { body: object(spec, resourceVersion) }),
  };
}
