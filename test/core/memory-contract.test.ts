// The Datastore contract suite against the memory datastore.
import { MemoryDatastore } from 'blockipam/core';
import { datastoreContract } from './datastore-contract.ts';

datastoreContract('memory', () =>
  Promise.resolve({ ds: new MemoryDatastore(), cleanup: () => Promise.resolve() }),
);
