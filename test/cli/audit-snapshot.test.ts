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

test('pods are read 2,000 per page, one page ahead, and kept with only the fields the checks read', async () => {
  const many: Pod[] = Array.from({ length: 4_001 }, (_, i) => ({
    metadata: {
      namespace: 'ns',
      name: `q-${String(i).padStart(4, '0')}`,
      uid: `uid-${i}`,
      labels: { app: 'x' },
      annotations: { big: 'y'.repeat(100) },
      ...(i === 1 ? { deletionTimestamp: '2026-12-02T00:00:00Z' } : {}),
    },
    spec: { nodeName: 'n-0', ...(i === 2 ? { hostNetwork: true } : {}) },
    status: { phase: 'Running', podIP: '10.0.0.1', podIPs: [{ ip: '10.0.0.1' }, { ip: 'fd00::1' }] },
  }));
  const ds = new MemoryDatastore({ nodes, pods: many });
  const limits: number[] = [];
  const listPodPage = ds.listPodPage.bind(ds);
  ds.listPodPage = (options: Parameters<Datastore['listPodPage']>[0]) => {
    limits.push(options.limit);
    return listPodPage(options);
  };
  const snapshot = await takeSnapshot(ds);
  assert.deepEqual(limits, [2000, 2000, 2000]);
  assert.equal(snapshot.pods.length, 4_001);
  assert.deepEqual(snapshot.pods[1], {
    metadata: { namespace: 'ns', name: 'q-0001', uid: 'uid-1', deletionTimestamp: '2026-12-02T00:00:00Z' },
    spec: { nodeName: 'n-0', hostNetwork: undefined },
    status: { phase: 'Running', podIP: '10.0.0.1', podIPs: [{ ip: '10.0.0.1' }, { ip: 'fd00::1' }] },
  });
  assert.equal(snapshot.pods[2]?.spec?.hostNetwork, true);
  assert.deepEqual(
    snapshot.pods.map((p) => p.metadata.name),
    many.map((p) => p.metadata.name),
  );
});
