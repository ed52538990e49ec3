// The Datastore contract suite against the memory datastore.
import { MemoryDatastore } from '../../core/index.ts';
import { datastoreContract } from './datastore-contract.ts';

datastoreContract('memory', () =>
  Promise.resolve({ ds: new MemoryDatastore(), cleanup: () => Promise.resolve() }),
);
