/**
 * The core integration tests' view of the run's control plane: installs blockipam's CRDs (once
 * per process, waits until established), gives a KubeDatastore as the admin identity, and wipes
 * every blockipam object (test files share one cluster: each starts and ends clean).
 */
import type { KubeDatastore } from 'blockipam/core/kube';
import { adminDatastore } from '../helpers/crds.ts';

const KINDS = ['ipamblocks', 'ippools', 'ipamconfigs', 'ipreservations'] as const;

/** A datastore on the run's API server as blockipam-admin (CRDs installed: helpers/crds.ts). */
export const kubeDatastore = (): KubeDatastore => adminDatastore();

/** Deletes every blockipam object (deletecollection per kind). */
export async function wipe(ds: KubeDatastore): Promise<void> {
  for (const kind of KINDS) await ds.transport.request('DELETE', `/apis/ipam.blockipam.io/v1alpha1/${kind}`);
}
