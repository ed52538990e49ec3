// Batched release on the memory store: releaseAddresses writes each block once for all its items
// (no guaranteed 409 for the second item of a block), collects a failing block's items in
// `failed` and goes on with the other blocks (CNI GC reports them); releaseNodeBlocks retries a
// block at most maxRetries times in all.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  autoAssign,
  ConflictError,
  findByHandle,
  isRetriesExhausted,
  releaseAddresses,
  releaseForGC,
  releaseNodeBlocks,
  UnavailableError,
  withBlocks,
} from 'blockipam/core';
import type { AddressRelease, Datastore, IPAMBlock, ResourceStore } from 'blockipam/core';
import { pod, pool, world } from './fixtures.ts';

/** `ds` with some block calls replaced; everything else delegates. */
function replacingBlocks(ds: Datastore, replaced: Partial<ResourceStore<IPAMBlock>>): Datastore {
  const blocks: ResourceStore<IPAMBlock> = {
    get: (n, o) => ds.blocks.get(n, o),
    list: (o) => ds.blocks.list(o),
    listMetadata: (o) => ds.blocks.listMetadata(o),
    listPage: (o) => ds.blocks.listPage(o),
    create: (b, o) => ds.blocks.create(b, o),
    update: (b, o) => ds.blocks.update(b, o),
    delete: (n, p, o) => ds.blocks.delete(n, p, o),
    ...replaced,
  };
  return withBlocks(ds, blocks);
}

/** Two /28 blocks of n1 (13 addresses each), 20 pods: the items to release, in allocation order. */
async function twoFullishBlocks() {
  const w = world({ pools: [pool('p', { cidr: '10.9.0.0/24', blockSize: 28 })] });
  const items: AddressRelease[] = [];
  for (let i = 0; i < 20; i++) {
    const got = await autoAssign(w.ds, { ...pod(`p${i}`), node: 'n1' }, w.options);
    assert.ok(got.ok && got.ipv4);
    items.push({
      address: got.ipv4.address,
      handle: `net.p${i}.eth0`,
      sequence: got.ipv4.sequence,
      block: got.ipv4.block,
    });
  }
  assert.equal(new Set(items.map((i) => i.block)).size, 2);
  return { w, items };
}

describe('releaseAddresses (batched by block)', () => {
  for (const named of [true, false])
    it(`20 items in 2 blocks: 2 UPDATEs, no conflict (items ${named ? 'name their block' : 'found by one LIST'})`, async () => {
      const { w, items } = await twoFullishBlocks();
      const writes = w.ds.stats.writes;
      const conflicts = w.stats.conflicts;
      const given = named ? items : items.map(({ block: _block, ...rest }) => rest);
      const got = await releaseAddresses(w.ds, given, { node: 'n1' }, w.options);
      assert.equal(got.released.length, 20);
      assert.deepEqual([got.refused, got.gone, got.failed], [[], [], []]);
      assert.equal(w.ds.stats.writes - writes, 2, 'one write per block');
      assert.equal(w.stats.conflicts - conflicts, 0, 'no self-inflicted 409');
      assert.deepEqual(await w.problems(), []);
    });

  it('per item inside one write: a stale sequence is refused, a foreign handle is gone, the rest released', async () => {
    const { w, items } = await twoFullishBlocks();
    const [a, b, c] = items as [AddressRelease, AddressRelease, AddressRelease];
    const got = await releaseAddresses(
      w.ds,
      [a, { ...b, sequence: (b.sequence ?? 0) - 1 }, { ...c, handle: 'net.other.eth0' }],
      {},
      w.options,
    );
    assert.deepEqual(
      got.released.map((r) => r.address),
      [a.address],
    );
    assert.deepEqual(
      got.refused.map((r) => r.address),
      [b.address],
    );
    assert.deepEqual(
      got.gone.map((g) => g.address),
      [c.address],
    );
    assert.equal((await findByHandle(w.ds, b.handle)).length, 1, 'the refused one is still held');
  });

  it("a block whose write fails: its items are in `failed`, the other block's are released", async () => {
    const { w, items } = await twoFullishBlocks();
    const broken = items[0]!.block!;
    const ds = replacingBlocks(w.ds, {
      update: (block, o) =>
        block.metadata.name === broken
          ? Promise.reject(new UnavailableError(`PUT ${block.metadata.name}: API server unreachable`))
          : w.ds.blocks.update(block, o),
    });
    const got = await releaseAddresses(ds, items, {}, w.options);
    const inBroken = items.filter((i) => i.block === broken);
    assert.deepEqual(
      got.failed.map((f) => f.item),
      inBroken,
    );
    assert.ok(got.failed.every((f) => f.error.name === 'UnavailableError'));
    assert.equal(got.released.length, items.length - inBroken.length);
  });

  it('GC reports the failed ones (releaseForGC returns `failed`)', async () => {
    const { w, items } = await twoFullishBlocks();
    const broken = items[0]!.block!;
    const ds = replacingBlocks(w.ds, {
      update: (block, o) =>
        block.metadata.name === broken
          ? Promise.reject(new UnavailableError('unreachable'))
          : w.ds.blocks.update(block, o),
    });
    const got = await releaseForGC(ds, { node: 'n1', network: 'net', validAttachments: [] }, w.options);
    assert.ok(got.failed.length > 0);
    assert.equal(got.released.length + got.failed.length, items.length);
  });
});

describe('releaseNodeBlocks (retry bound)', () => {
  // Every write loses (Conflict); re-reads show the block in use, except every 5th shows it
  // empty — the pattern that made the old loop (updateBlock's retries inside its own) run
  // 4 UPDATEs per outer attempt, ~maxRetries² in all.
  it('a block that keeps changing is tried at most maxRetries times in all, then RetriesExhausted', async () => {
    const w = world({ pools: [pool('p', { cidr: '10.9.0.0/24', blockSize: 28 })] });
    assert.ok((await autoAssign(w.ds, { ...pod('x'), node: 'n1' }, w.options)).ok);
    const [inUse] = await w.ds.blocks.list();
    assert.ok(inUse);
    const empty: IPAMBlock = { ...inUse, spec: { ...inUse.spec, allocations: {} } };
    let writes = 0;
    let reads = 0;
    const conflict = (name: string): Promise<never> =>
      Promise.reject(new ConflictError(`ipamblocks/${name}`, 'the object has been modified'));
    const ds = replacingBlocks(w.ds, {
      update: (block) => (writes++, conflict(block.metadata.name)),
      delete: (name) => (writes++, conflict(name)),
      get: () => Promise.resolve(structuredClone(++reads % 5 === 4 ? empty : inUse)),
    });
    await assert.rejects(releaseNodeBlocks(ds, 'n1', { ...w.options, maxRetries: 5 }), isRetriesExhausted);
    assert.ok(writes <= 5, `${writes} writes for maxRetries 5`);
  });
});
