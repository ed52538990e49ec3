// The Datastore contract suite against the real kube-apiserver (same cases as the memory store).
import { datastoreContract } from '../core/datastore-contract.ts';
import { kubeDatastore, wipe } from './core-cluster.ts';

datastoreContract('Kubernetes API server', async () => {
  const ds = kubeDatastore();
  await wipe(ds);
  return {
    ds,
    cleanup: async () => {
      await wipe(ds);
      ds.close();
    },
  };
});
