// The allocator on the real API server: IPv6 and dual-stack, the smallest block hitting
// maxBlocksPerNode, re-creating a pool with another block size, stale-sequence releases, the
// API cost of a warm allocation, and a node's borrowed addresses seen by its own lookups (the
// `borrowed` node label, selected by existence: duplicate ADD refused, GC, release).
import assert from 'node:assert/strict';
import { after, beforeEach, describe, it } from 'node:test';
import {
  autoAssign,
  checkBlockInvariants,
  findByHandle,
  listNodeAllocations,
  loadSnapshot,
  nodeLabel,
  releaseAddresses,
  releaseByHandle,
  releaseForGC,
  validatePool,
} from 'blockipam/core';
import type { IPPool } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { adminDatastore, wipeBlockipam } from '../helpers/crds.ts';

const ds: KubeDatastore = adminDatastore();
beforeEach(() => wipeBlockipam(ds));
after(async () => {
  await wipeBlockipam(ds);
  ds.close();
});

const pool = (name: string, spec: IPPool['spec']): IPPool => ({ metadata: { name }, spec });
const req = (id: string, node = 'node-1') => ({
  handle: `k8s-pod-network.${id}.eth0`,
  node,
  pod: { namespace: 'default', name: id, uid: `uid-${id}` },
  nodeLabels: {},
  namespaceLabels: {},
});

async function problems(): Promise<string[]> {
  return (await ds.blocks.list()).flatMap((b) => checkBlockInvariants(b, { nowMs: Date.now() }));
}

describe('core allocator on kube-apiserver', () => {
  it('IPv6 only and dual-stack', async () => {
    await ds.pools.create(pool('v4', { cidr: '10.80.0.0/16' }));
    await ds.pools.create(pool('v6', { cidr: 'fd00:80::/48' }));
    const v6 = await autoAssign(ds, { ...req('v6only'), ipv4: false, ipv6: true });
    assert.ok(v6.ok && v6.ipv6 && !v6.ipv4);
    assert.match(v6.ipv6.address, /^fd00:80:/);
    assert.match(v6.ipv6.block, /^fd00-80-/);
    const dual = await autoAssign(ds, { ...req('dual'), ipv6: true });
    assert.ok(dual.ok && dual.ipv4 && dual.ipv6);
    assert.equal(dual.ipv6.block, v6.ipv6.block, 'same node, same IPv6 block');
    assert.deepEqual(
      (await findByHandle(ds, 'k8s-pod-network.dual.eth0', { node: 'node-1' })).map((a) => a.family).sort(),
      [4, 6],
    );
    assert.deepEqual(await problems(), []);
  });

  it('dual-stack is all-or-nothing when the IPv6 pool is full', async () => {
    await ds.pools.create(pool('v4', { cidr: '10.81.0.0/16' }));
    await ds.pools.create(pool('v6-tiny', { cidr: 'fd00:81::/126', blockSize: 126 }));
    assert.equal((await autoAssign(ds, { ...req('a'), ipv6: true })).ok, true);
    assert.equal((await autoAssign(ds, { ...req('b'), ipv6: true })).ok, true);
    const third = await autoAssign(ds, { ...req('c'), ipv6: true });
    assert.ok(!third.ok && third.reason === 'Exhausted', JSON.stringify(third));
    assert.deepEqual(
      await findByHandle(ds, 'k8s-pod-network.c.eth0'),
      [],
      'the IPv4 address was rolled back',
    );
    assert.deepEqual(await problems(), []);
  });

  it('a pool of the smallest allowed blocks (/30) hits maxBlocksPerNode with a message naming the limit', async () => {
    await ds.configs.create({ metadata: { name: 'default' }, spec: { maxBlocksPerNode: 4 } });
    await ds.pools.create(pool('tiny-blocks', { cidr: '10.82.0.0/24', blockSize: 30 }));
    for (let i = 0; i < 4; i++) assert.equal((await autoAssign(ds, req(`p${i}`))).ok, true);
    const fifth = await autoAssign(ds, req('p4'));
    assert.ok(!fifth.ok && fifth.reason === 'BlockLimit', JSON.stringify(fifth));
    assert.match(fifth.message, /at maxBlocksPerNode \(4 blocks, all full\)/);
    assert.equal((await ds.blocks.list()).length, 4);
  });

  it('the same CIDR with another block size is rejected while old blocks exist', async () => {
    await ds.pools.create(pool('resize', { cidr: '10.83.0.0/16' }));
    assert.equal((await autoAssign(ds, req('x'))).ok, true);
    await ds.pools.delete('resize');
    const verdict = await validatePool(ds, pool('resize', { cidr: '10.83.0.0/16', blockSize: 28 }));
    assert.ok(
      !verdict.ok && /overlaps IPAMBlock "10-83-[0-9-]+-26" of block size 26/.test(verdict.message),
      JSON.stringify(verdict),
    );
    await releaseByHandle(ds, 'k8s-pod-network.x.eth0', { node: 'node-1' });
    for (const b of await ds.blocks.list()) await ds.blocks.delete(b.metadata.name);
    assert.deepEqual(await validatePool(ds, pool('resize', { cidr: '10.83.0.0/16', blockSize: 28 })), {
      ok: true,
    });
  });

  it('a release with a stale sequence number changes nothing', async () => {
    await ds.pools.create(pool('seq', { cidr: '10.84.0.0/16' }));
    const a = await autoAssign(ds, req('a'));
    assert.ok(a.ok && a.ipv4);
    const before = await ds.blocks.get(a.ipv4.block);
    const item = { address: a.ipv4.address, handle: 'k8s-pod-network.a.eth0', block: a.ipv4.block };
    const stale = await releaseAddresses(ds, [{ ...item, sequence: a.ipv4.sequence - 1 }]);
    assert.deepEqual([stale.released.length, stale.refused.length], [0, 1]);
    const afterStale = await ds.blocks.get(a.ipv4.block);
    assert.equal(afterStale?.metadata.resourceVersion, before?.metadata.resourceVersion, 'no write happened');
    const exact = await releaseAddresses(ds, [{ ...item, sequence: a.ipv4.sequence }]);
    assert.equal(exact.released.length, 1);
  });

  it('a warm allocation costs 1 read + 1 write on the wire', async () => {
    await ds.pools.create(pool('warm', { cidr: '10.85.0.0/16' }));
    const snapshot = await loadSnapshot(ds);
    assert.equal((await autoAssign(ds, { ...req('first'), snapshot })).ok, true);
    const before = { ...ds.transport.stats.byMethod };
    assert.equal((await autoAssign(ds, { ...req('second'), snapshot })).ok, true);
    const delta: Record<string, number> = {};
    for (const [method, count] of Object.entries(ds.transport.stats.byMethod))
      if (count !== (before[method] ?? 0)) delta[method] = count - (before[method] ?? 0);
    assert.deepEqual(delta, { GET: 1, PUT: 1 });
  });

  it("a node's borrowed address: duplicate ADD refused, found by its lookups, released by GC", async () => {
    // Two /29 blocks (5 pods each), one block per node: a 253-character node name (its label key
    // must still be valid) fills its block, another node claims the second, the long-named node
    // borrows `x` from it, then frees one of its own addresses.
    const long = `n${'a'.repeat(250)}-2`;
    await ds.configs.create({ metadata: { name: 'default' }, spec: { maxBlocksPerNode: 1 } });
    await ds.pools.create(pool('borrow', { cidr: '10.86.0.0/28', blockSize: 29 }));
    const mk = (id: string, node: string) => ({ ...req(id, node), network: 'k8s-pod-network' });
    for (let i = 0; i < 5; i++) assert.equal((await autoAssign(ds, mk(`p${i}`, long))).ok, true);
    assert.equal((await autoAssign(ds, mk('a', 'node-1'))).ok, true);
    const x = await autoAssign(ds, mk('x', long));
    assert.ok(x.ok && x.ipv4?.borrowed, JSON.stringify(x));
    const lender = (await ds.blocks.get(x.ipv4.block))!;
    assert.equal(lender.metadata.labels?.[nodeLabel(long)], 'borrowed');
    await releaseByHandle(ds, 'k8s-pod-network.p0.eth0', { node: long });

    const again = await autoAssign(ds, mk('x', long));
    assert.ok(!again.ok && again.reason === 'HandleInUse', JSON.stringify(again));
    assert.deepEqual(
      (await findByHandle(ds, 'k8s-pod-network.x.eth0', { node: long })).map((a) => a.address),
      [x.ipv4.address],
    );
    assert.equal((await listNodeAllocations(ds, long)).length, 5);

    const live = ['p1', 'p2', 'p3', 'p4'].map((id) => ({ containerID: id, ifname: 'eth0' }));
    const gc = await releaseForGC(ds, { node: long, network: 'k8s-pod-network', validAttachments: live });
    assert.deepEqual(
      gc.released.map((a) => a.address),
      [x.ipv4.address],
    );
    const after = (await ds.blocks.get(x.ipv4.block))!;
    assert.equal(after.metadata.labels?.[nodeLabel(long)], undefined, 'label removed with the last address');
    assert.equal(after.metadata.labels?.[nodeLabel('node-1')], 'affine');
    assert.deepEqual(
      await findByHandle(ds, 'k8s-pod-network.a.eth0', { node: 'node-1' }).then((f) => f.length),
      1,
    );
    assert.deepEqual(await problems(), []);
  });
});
