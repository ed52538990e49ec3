// A node's allocations in borrowed blocks (another node's or an unowned block) on the memory
// datastore: the node's own lookups (duplicate ADD, findByHandle, listNodeAllocations, release by
// handle, GC) see them through the block's `borrowed` node label, kept in the same UPDATE.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  autoAssign,
  checkBlockInvariants,
  findByHandle,
  listNodeAllocations,
  loadSnapshot,
  nodeLabel,
  releaseByHandle,
  releaseForGC,
  releaseNodeBlocks,
} from 'blockipam/core';
import type { AssignedAddress } from 'blockipam/core';
import { pod, pool, world } from './fixtures.ts';
import type { World } from './fixtures.ts';

/**
 * Pool of two /29 blocks (5 pods each), maxBlocksPerNode 1: n2 fills its block with p0..p4, n1
 * claims the other, n2's `x` is borrowed from n1's block; then n2's p0 is released, so n2's own
 * block has room again.
 */
async function borrowedSetup(): Promise<{ w: World; x: AssignedAddress; own: string }> {
  const w = world({
    pools: [pool('p', { cidr: '10.90.0.0/28', blockSize: 29 })],
    config: { maxBlocksPerNode: 1 },
  });
  for (let i = 0; i < 5; i++)
    assert.equal(
      (await autoAssign(w.ds, { ...pod(`p${i}`), network: 'net', node: 'n2' }, w.options)).ok,
      true,
    );
  const a = await autoAssign(w.ds, { ...pod('a'), network: 'net', node: 'n1' }, w.options);
  const x = await autoAssign(w.ds, { ...pod('x'), network: 'net', node: 'n2' }, w.options);
  assert.ok(a.ok && a.ipv4 && x.ok && x.ipv4?.borrowed, JSON.stringify(x));
  assert.equal(x.ipv4.block, a.ipv4.block);
  await releaseByHandle(w.ds, 'net.p0.eth0', { node: 'n2' }, w.options);
  const own = (await w.ds.blocks.list()).find((b) => b.spec.affinity === 'n2')!.metadata.name;
  return { w, x: x.ipv4, own };
}

describe('borrowed allocations: the node sees its own', () => {
  it("a duplicate ADD of a handle whose address is borrowed is refused, though the node's block has room", async () => {
    const { w, x } = await borrowedSetup();
    const again = await autoAssign(w.ds, { ...pod('x'), network: 'net', node: 'n2' }, w.options);
    assert.ok(!again.ok && again.reason === 'HandleInUse', JSON.stringify(again));
    assert.deepEqual(
      (await findByHandle(w.ds, 'net.x.eth0')).map((a) => a.address),
      [x.address],
      'no second address',
    );
    assert.deepEqual(await w.problems(), []);
  });

  it('a duplicate ADD is refused when the borrowed block is unowned and a new block could be claimed', async () => {
    const w = world({
      pools: [pool('p', { cidr: '10.91.0.0/28', blockSize: 29 })],
      config: { maxBlocksPerNode: 1 },
    });
    for (const [id, node] of [
      ['a', 'n1'],
      ['b', 'n3'],
    ] as const)
      await autoAssign(w.ds, { ...pod(id), node }, w.options);
    const x = await autoAssign(w.ds, { ...pod('x'), node: 'n2' }, w.options);
    assert.ok(x.ok && x.ipv4?.borrowed);
    // The node whose block x was borrowed from goes; the other node's block frees up for a claim.
    const lender = (await w.ds.blocks.get(x.ipv4.block))!.spec.affinity!;
    const other = lender === 'n1' ? 'n3' : 'n1';
    await releaseByHandle(w.ds, `net.${other === 'n1' ? 'a' : 'b'}.eth0`, { node: other }, w.options);
    await releaseByHandle(w.ds, `net.${lender === 'n1' ? 'a' : 'b'}.eth0`, { node: lender }, w.options);
    const { deleted } = await releaseNodeBlocks(w.ds, other, w.options);
    assert.equal(deleted.length, 1);
    const again = await autoAssign(w.ds, { ...pod('x'), node: 'n2' }, w.options);
    assert.ok(!again.ok && again.reason === 'HandleInUse', JSON.stringify(again));
    assert.equal(w.stats.claims, 2, 'no block claimed for the duplicate');
  });

  it('the warm path stays 1 read + 1 write with borrowed blocks around', async () => {
    const { w } = await borrowedSetup();
    const snapshot = await loadSnapshot(w.ds);
    const before = { ...w.ds.stats };
    const got = await autoAssign(
      w.ds,
      { ...pod('y'), node: 'n2', snapshot, nodeLabels: {}, namespaceLabels: {} },
      w.options,
    );
    assert.ok(got.ok && !got.ipv4?.borrowed);
    assert.deepEqual(
      { reads: w.ds.stats.reads - before.reads, writes: w.ds.stats.writes - before.writes },
      { reads: 1, writes: 1 },
    );
  });

  it('findByHandle / listNodeAllocations with the node find the borrowed address', async () => {
    const { w, x } = await borrowedSetup();
    assert.deepEqual(
      (await findByHandle(w.ds, 'net.x.eth0', { node: 'n2' })).map((a) => [a.address, a.borrowed]),
      [[x.address, true]],
    );
    const mine = await listNodeAllocations(w.ds, 'n2');
    assert.deepEqual(mine.map((a) => a.allocation.handle).sort(), [
      'net.p1.eth0',
      'net.p2.eth0',
      'net.p3.eth0',
      'net.p4.eth0',
      'net.x.eth0',
    ]);
    assert.equal((await listNodeAllocations(w.ds, 'n1')).length, 1, "n1's lookups do not see n2's");
  });

  it('releaseByHandle with the node frees the borrowed address and drops the label in the same write', async () => {
    const { w, x } = await borrowedSetup();
    const before = w.ds.stats.writes;
    const done = await releaseByHandle(w.ds, 'net.x.eth0', { node: 'n2' }, w.options);
    assert.deepEqual(
      done.released.map((a) => a.address),
      [x.address],
    );
    assert.equal(w.ds.stats.writes - before, 1);
    const block = (await w.ds.blocks.get(x.block))!;
    assert.equal(block.metadata.labels?.[nodeLabel('n2')], undefined, "n2's last address there is gone");
    assert.equal(block.metadata.labels?.[nodeLabel('n1')], 'affine');
    assert.deepEqual(await w.problems(), []);
  });

  it("GC releases the node's stale borrowed allocation and keeps the live ones", async () => {
    const { w, x, own } = await borrowedSetup();
    const live = ['p1', 'p2', 'p3', 'p4'].map((id) => ({ containerID: id, ifname: 'eth0' }));
    const done = await releaseForGC(w.ds, { node: 'n2', network: 'net', validAttachments: live }, w.options);
    assert.deepEqual(
      done.released.map((a) => [a.allocation.handle, a.address]),
      [['net.x.eth0', x.address]],
    );
    assert.equal((await findByHandle(w.ds, 'net.a.eth0')).length, 1, "the lender's pod stays");
    assert.equal(Object.keys((await w.ds.blocks.get(own))!.spec.allocations).length, 4);
    assert.deepEqual(await w.problems(), []);
  });

  it('the borrowed label stays while the node holds another address in the block', async () => {
    const { w, x } = await borrowedSetup();
    // Fill n2's own block again, then borrow a second address from n1's block.
    await autoAssign(w.ds, { ...pod('fill'), node: 'n2' }, w.options);
    const y = await autoAssign(w.ds, { ...pod('y'), node: 'n2' }, w.options);
    assert.ok(y.ok && y.ipv4?.borrowed && y.ipv4.block === x.block, JSON.stringify(y));
    await releaseByHandle(w.ds, 'net.x.eth0', { node: 'n2' }, w.options);
    const block = (await w.ds.blocks.get(x.block))!;
    assert.equal(block.metadata.labels?.[nodeLabel('n2')], 'borrowed');
    assert.deepEqual(checkBlockInvariants(block), []);
  });
});

describe('checkBlockInvariants: node labels', () => {
  it('names a missing borrowed label and a stale one', async () => {
    const { w, x } = await borrowedSetup();
    const block = (await w.ds.blocks.get(x.block))!;
    const labels = { ...block.metadata.labels };
    delete labels[nodeLabel('n2')];
    const missing = checkBlockInvariants({ ...block, metadata: { ...block.metadata, labels } });
    assert.equal(missing.length, 1);
    assert.match(missing[0]!, /node "n2" holds ordinal \d+ but the label .* is missing/);
    const stale = checkBlockInvariants({
      ...block,
      metadata: { ...block.metadata, labels: { ...block.metadata.labels, [nodeLabel('n9')]: 'borrowed' } },
    });
    assert.equal(stale.length, 1);
    assert.match(stale[0]!, /stale label node\.ipam\.blockipam\.io\/[0-9a-f]{40}: no allocation/);
  });
});
