// GC (releaseForGC) on the real API server never releases an allocation whose pod (by UID) is
// alive on another node with that address (issue 9, defect 3 — calico #12257: an ADD recorded
// under the wrong node name). Stale allocations of a deleted pod, of a pod of another UID, and of
// a pod on this node the runtime no longer lists are released as before.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { autoAssign, listNodeAllocations, releaseForGC } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import {
  adminDatastore,
  cleanCluster,
  createNamespace,
  createPod,
  poolObject,
  setPodIP,
  uniqueNamespace,
} from '../cli/cluster.ts';

const ns = uniqueNamespace('gc-alive');
let ds: KubeDatastore;
before(async () => {
  ds = adminDatastore();
  await cleanCluster(ds);
  await createNamespace(ds, ns);
});
after(async () => {
  await cleanCluster(ds, [ns]);
  await ds.transport.request('DELETE', `/api/v1/namespaces/${ns}`);
  ds.close();
});

const network = 'k8s-pod-network';
async function allocate(id: string, uid: string): Promise<string> {
  const got = await autoAssign(ds, {
    handle: `${network}.${id}.eth0`,
    network,
    node: 'node-a',
    pod: { namespace: ns, name: id, uid },
    nodeLabels: {},
    namespaceLabels: {},
  });
  assert.ok(got.ok && got.ipv4, JSON.stringify(got));
  return got.ipv4.address;
}

describe('GC and a pod alive on another node', () => {
  it('keeps the allocation of a pod (same UID) running elsewhere with its address; releases the rest', async () => {
    await ds.pools.create(poolObject('gc-pool', '10.91.0.0/16'));
    // moved: recorded on node-a, but the pod (same UID) runs on node-b with that address.
    const movedPod = await createPod(ds, { namespace: ns, name: 'moved', node: 'node-b' });
    const moved = await allocate('moved', movedPod.metadata.uid ?? '');
    await setPodIP(ds, movedPod, moved);
    // gone: no such pod. renamed: a pod of that name on node-b with the address, another UID.
    const gone = await allocate('gone', 'uid-gone');
    const renamedPod = await createPod(ds, { namespace: ns, name: 'renamed', node: 'node-b' });
    const renamed = await allocate('renamed', 'uid-of-an-older-pod');
    await setPodIP(ds, renamedPod, renamed);
    // here: the pod runs on node-a itself; the runtime of node-a does not list the attachment.
    const herePod = await createPod(ds, { namespace: ns, name: 'here', node: 'node-a' });
    const here = await allocate('here', herePod.metadata.uid ?? '');
    await setPodIP(ds, herePod, here);

    const got = await releaseForGC(ds, { node: 'node-a', network, validAttachments: [] });
    assert.deepEqual(
      got.aliveElsewhere.map((a) => a.address),
      [moved],
      'the pod alive on node-b keeps its address',
    );
    assert.deepEqual(got.released.map((a) => a.address).sort(), [gone, renamed, here].sort());
    assert.deepEqual(got.failed, []);
    assert.deepEqual(
      (await listNodeAllocations(ds, 'node-a')).map((a) => a.address),
      [moved],
      "nothing but the live pod's allocation is left on node-a",
    );
  });
});
