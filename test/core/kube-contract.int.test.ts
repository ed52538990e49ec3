// The Datastore contract suite against the real kube-apiserver (same cases as the memory store).
import { datastoreContract } from '../core/datastore-contract.ts';
import { adminDatastore, wipeBlockipam } from '../helpers/crds.ts';

datastoreContract('Kubernetes API server', async () => {
  const ds = adminDatastore();
  await wipeBlockipam(ds);
  return {
    ds,
    cleanup: async () => {
      await wipeBlockipam(ds);
      ds.close();
    },
  };
});
