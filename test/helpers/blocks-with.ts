/** A datastore with some of its block store's calls replaced (a test's gate or probe), the rest forwarded. */
import { withBlocks } from 'blockipam/core';
import type { Datastore, IPAMBlock, ResourceStore } from 'blockipam/core';

export function blocksWith(ds: Datastore, overrides: Partial<ResourceStore<IPAMBlock>>): Datastore {
  const b = ds.blocks;
  return withBlocks(ds, {
    get: (name, o) => b.get(name, o),
    list: (o) => b.list(o),
    listMetadata: (o) => b.listMetadata(o),
    listPage: (o) => b.listPage(o),
    create: (object, o) => b.create(object, o),
    update: (object, o) => b.update(object, o),
    delete: (name, pre, o) => b.delete(name, pre, o),
    ...overrides,
  });
}
