/**
 * blockipam's CRDs on the run's control plane, for every test suite that needs them: apply
 * crds/ and wait until the API server serves them, an admin KubeDatastore, and a wipe of every
 * blockipam object (test files share one cluster: each starts and ends clean).
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isUnavailable } from 'blockipam/core';
import { KubeDatastore } from 'blockipam/core/kube';
import { loadKubeconfig } from 'blockipam/core/kubeconfig';
import { controlPlane, kubectl } from './control-plane.ts';

const KINDS = ['ipamblocks', 'ippools', 'ipamconfigs', 'ipreservations', 'ipamnodes'] as const;
const crdDir = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..', 'crds');
/** The CRDs' names, e.g. `ipamblocks.ipam.blockipam.io`. */
export const CRD_NAMES = KINDS.map((k) => `${k}.ipam.blockipam.io`);
let installed = false;

/**
 * Applies crds/ and waits (≤ 60 s) until each is Established.
 * @param options.once skip when this process already did it (default true); a suite that
 *   deletes the CRDs afterwards passes false
 * @throws Error with kubectl's stderr when apply or wait fails
 */
export function installCrds(options: { once?: boolean } = {}): void {
  if (installed && options.once !== false) return;
  const apply = kubectl(['apply', '-f', crdDir]);
  if (apply.status !== 0) throw new Error(`kubectl apply crds failed: ${apply.stderr}`);
  const wait = kubectl([
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    ...CRD_NAMES.map((n) => `crd/${n}`),
  ]);
  if (wait.status !== 0) throw new Error(`CRDs not established: ${wait.stderr}`);
  installed = true;
}

/** A datastore on the run's API server as blockipam-admin, CRDs installed. */
export function adminDatastore(): KubeDatastore {
  installCrds();
  return new KubeDatastore(loadKubeconfig(controlPlane().adminKubeconfig));
}

/**
 * Deletes every blockipam object (one deletecollection per kind). A collection of thousands
 * (the cost curves' 5,000 blocks) outlasts the request timeout while the API server goes on
 * deleting, so an unanswered request is sent again, up to 10 times.
 */
export async function wipeBlockipam(ds: KubeDatastore): Promise<void> {
  for (const kind of KINDS)
    for (let attempt = 1; ; attempt++) {
      try {
        await ds.transport.request('DELETE', `/apis/ipam.blockipam.io/v1alpha1/${kind}`);
        break;
      } catch (error) {
        if (!isUnavailable(error) || attempt >= 10) throw error;
      }
    }
}
