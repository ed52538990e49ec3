// The audit's snapshot reads every kind through the Datastore port's paged LIST (core's listAll):
// all pages of a kind, its resourceVersion recorded, and a LIST whose continue token expires
// mid-way is started over (memory store, proved like the API server by the contract suite).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MemoryDatastore } from 'blockipam/core';
import type { Datastore, Node, Pod } from 'blockipam/core';
import { takeSnapshot } from '../../cli/audit/snapshot.ts';

const NODES = 1_201; // three pages of 500
const nodes: Node[] = Array.from({ length: NODES }, (_, i) => ({ metadata: { name: `n-${i}` } }));
const pods: Pod[] = Array.from({ length: 501 }, (_, i) => ({
  metadata: { namespace: 'ns', name: `p-${i}`, uid: `uid-${i}` },
  spec: { nodeName: `n-${i}` },
}));

test('every page of every kind is read, with its resourceVersion and progress', async () => {
  const ds = new MemoryDatastore({ nodes, pods });
  const progress: string[] = [];
  const snapshot = await takeSnapshot(ds, { progress: (kind, n) => progress.push(`${kind} ${n}`) });
  assert.equal(snapshot.nodes.size, NODES);
  assert.equal(snapshot.pods.length, 501);
  assert.deepEqual(
    progress.filter((p) => p.startsWith('nodes')),
    ['nodes 500', 'nodes 1000', 'nodes 1201'],
  );
  for (const kind of ['ipamblocks', 'ippools', 'ipreservations', 'ipamconfigs', 'nodes', 'pods'])
    assert.ok(snapshot.resourceVersions[kind], kind);
});

test('a continue token that expires mid-list (etcd compaction) starts that kind over, once', async () => {
  const ds = new MemoryDatastore({ nodes, pods });
  let pages = 0;
  const listNodePage = ds.listNodePage.bind(ds);
  ds.listNodePage = (options: Parameters<Datastore['listNodePage']>[0]) => {
    pages += 1;
    if (pages === 2) ds.compact(); // the token page 1 gave is now too old
    return listNodePage(options);
  };
  const snapshot = await takeSnapshot(ds);
  assert.equal(snapshot.nodes.size, NODES);
  assert.equal(pages, 2 + 3, 'page 1, the expired page 2, then three pages again');
});
