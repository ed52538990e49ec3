// ipamctl check reports progress on stderr once a kind passes 1,000 objects, and -q silences it
// (real API server, 1,000 seeded Node objects).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { KubeDatastore } from 'blockipam/core/kube';
import { adminDatastore, cleanCluster, createNode, ipamctl } from './cluster.ts';

let ds: KubeDatastore;
const NODES = 1000;

before(async () => {
  ds = adminDatastore();
  await cleanCluster(ds);
  // The count asserted below is every Node on the API server: a Node another file left behind
  // (CI once saw 1001) must not fail this one. Files run one at a time on the harness's control
  // plane, so none of them needs a Node now.
  await ds.transport.request('DELETE', '/api/v1/nodes');
  const names = Array.from({ length: NODES }, (_, i) => `progress-${i}`);
  // 16 creations in flight.
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < names.length; i = next++) await createNode(ds, names[i] ?? '');
  };
  await Promise.all(Array.from({ length: 16 }, worker));
});
after(async () => {
  await cleanCluster(ds);
  ds.close();
});

test('progress lines on stderr for a large kind; none with -q; the verdict is unaffected', async () => {
  const loud = await ipamctl(['check']);
  assert.equal(loud.code, 0, loud.stderr);
  assert.equal(loud.stderr, 'listing nodes: 1000 read\n');
  assert.match(loud.stdout, /Read 0 pools, 0 blocks \(0 allocations\), 1000 nodes/);
  const quiet = await ipamctl(['check', '-q']);
  assert.equal(quiet.code, 0);
  assert.equal(quiet.stderr, '');
});
