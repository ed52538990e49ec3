// The Datastore contract suite against the memory datastore.
import { MemoryDatastore } from 'blockipam/core';
import { datastoreContract } from './datastore-contract.ts';

datastoreContract('memory', (world) => {
  const ds = new MemoryDatastore(world);
  return Promise.resolve({
    ds,
    compact: () => Promise.resolve(ds.compact()),
    cleanup: () => Promise.resolve(),
  });
});
