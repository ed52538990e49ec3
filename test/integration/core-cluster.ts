/**
 * The core integration tests' view of the run's control plane: installs blockipam's CRDs (once
 * per process, waits until established), gives a KubeDatastore as the admin identity, and wipes
 * every blockipam object (test files share one cluster: each starts and ends clean).
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeDatastore } from '../../core/index.ts';
import { loadKubeconfig } from '../../core/kube/index.ts';
import { controlPlane, kubectl } from '../helpers/control-plane.ts';

const crdDir = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..', 'crds');
const KINDS = ['ipamblocks', 'ippools', 'ipamconfigs', 'ipreservations'] as const;
let installed = false;

/** Applies crds/ and waits until the API serves them. @throws Error when kubectl fails */
export function installCrds(): void {
  if (installed) return;
  const apply = kubectl(['apply', '-f', crdDir]);
  if (apply.status !== 0) throw new Error(`kubectl apply crds failed: ${apply.stderr}`);
  const wait = kubectl([
    'wait',
    '--for',
    'condition=established',
    '--timeout=60s',
    ...KINDS.map((k) => `crd/${k}.ipam.blockipam.io`),
  ]);
  if (wait.status !== 0) throw new Error(`CRDs not established: ${wait.stderr}`);
  installed = true;
}

/** A datastore on the run's API server as blockipam-admin. */
export function kubeDatastore(): KubeDatastore {
  installCrds();
  return new KubeDatastore(loadKubeconfig(controlPlane().adminKubeconfig));
}

/** Deletes every blockipam object (deletecollection per kind). */
export async function wipe(ds: KubeDatastore): Promise<void> {
  for (const kind of KINDS) await ds.transport.request('DELETE', `/apis/ipam.blockipam.io/v1alpha1/${kind}`);
}
