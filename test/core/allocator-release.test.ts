// Static assignment, release (preconditions), GC and empty-block release on the memory datastore.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  assignIP,
  autoAssign,
  findByHandle,
  mustParseCidr,
  newBlock,
  releaseAddresses,
  releaseByHandle,
  releaseForGC,
  releaseIdleBlock,
  releaseNodeBlocks,
  validatePool,
} from 'blockipam/core';
import { pod, pool, reservation, world } from './fixtures.ts';

describe('assignIP (static)', () => {
  const pools = [
    pool('v4', { cidr: '10.20.0.0/16' }),
    pool('v6', { cidr: 'fd00:20::/64' }),
    pool('other-ns', { cidr: '10.21.0.0/16', namespaceSelector: { matchLabels: { team: 'x' } } }),
  ];
  const cases: [string, string[], string][] = [
    ['a free address in a pool', ['10.20.5.10'], 'ok'],
    ['dual-stack pair', ['10.20.5.10', 'fd00:20::a'], 'ok'],
    ['outside every pool', ['192.168.1.1'], 'NotInPool'],
    ['the block gateway', ['10.20.5.1'], 'Reserved'],
    ['the IPv4 broadcast of the block', ['10.20.5.63'], 'Reserved'],
    ['inside an IPReservation', ['10.20.9.9'], 'Reserved'],
    ['a pool whose namespaceSelector excludes the pod', ['10.21.0.5'], 'NotInPool'],
    ['not an address', ['10.20.5.999'], 'NotInPool'],
  ];
  for (const [title, addresses, want] of cases) {
    it(title, async () => {
      const w = world({ pools, reservations: [reservation('r', ['10.20.9.0/24'])] });
      const got = await assignIP(w.ds, { ...pod('s'), node: 'n1', addresses }, w.options);
      assert.equal(got.ok ? 'ok' : got.reason, want, JSON.stringify(got));
    });
  }

  // docs/design-plugin.md §Invariants, 4: a second ADD of a live attachment must not get another address, wherever the
  // first one came from (here: another block, found through the node label).
  it('a handle that already holds an address elsewhere is refused (HandleInUse), nothing added', async () => {
    const w = world({ pools });
    const first = await assignIP(w.ds, { ...pod('a'), node: 'n1', addresses: ['10.20.5.10'] }, w.options);
    assert.ok(first.ok);
    const got = await assignIP(w.ds, { ...pod('a'), node: 'n1', addresses: ['10.20.9.20'] }, w.options);
    assert.ok(
      !got.ok && got.reason === 'HandleInUse' && got.message.includes('10.20.5.10'),
      JSON.stringify(got),
    );
    const blocks = await w.ds.blocks.list();
    const held = blocks
      .flatMap((b) => Object.values(b.spec.allocations))
      .filter((a) => a.handle === 'net.a.eth0');
    assert.equal(held.length, 1);
  });

  it('a taken address is refused, naming the holder', async () => {
    const w = world({ pools });
    await assignIP(w.ds, { ...pod('a'), node: 'n1', addresses: ['10.20.5.10'] }, w.options);
    const got = await assignIP(w.ds, { ...pod('b'), node: 'n2', addresses: ['10.20.5.10'] }, w.options);
    assert.ok(!got.ok && got.reason === 'Taken' && got.message.includes('net.a.eth0'));
  });

  it('all-or-nothing: a taken IPv6 address rolls the IPv4 one back', async () => {
    const w = world({ pools });
    await assignIP(w.ds, { ...pod('a'), node: 'n1', addresses: ['fd00:20::a'] }, w.options);
    const got = await assignIP(
      w.ds,
      { ...pod('b'), node: 'n1', addresses: ['10.20.5.10', 'fd00:20::a'] },
      w.options,
    );
    assert.ok(!got.ok && got.reason === 'Taken');
    assert.deepEqual(await findByHandle(w.ds, 'net.b.eth0'), []);
    assert.deepEqual(await w.problems(), []);
  });

  it("strictAffinity refuses an address in another node's block", async () => {
    const w = world({ pools, config: { strictAffinity: true } });
    await assignIP(w.ds, { ...pod('a'), node: 'n1', addresses: ['10.20.5.10'] }, w.options);
    const got = await assignIP(w.ds, { ...pod('b'), node: 'n2', addresses: ['10.20.5.11'] }, w.options);
    assert.ok(!got.ok && got.reason === 'NotAllowed' && /strictAffinity/.test(got.message));
  });

  it('refuses a block that would overlap a leftover block of another size', async () => {
    const w = world({ pools: [pool('v4', { cidr: '10.20.0.0/16', blockSize: 28 })] });
    await w.ds.blocks.create(
      newBlock({ cidr: mustParseCidr('10.20.5.0/26'), pool: 'old', node: 'n9', nowMs: w.now.ms }),
    );
    const got = await assignIP(w.ds, { ...pod('a'), node: 'n1', addresses: ['10.20.5.20'] }, w.options);
    assert.ok(
      !got.ok && got.reason === 'NotAllowed' && got.message.includes('10-20-5-0-26'),
      JSON.stringify(got),
    );
  });
});

describe('release', () => {
  it('a release with a stale sequence number changes nothing', async () => {
    const w = world();
    const a = await autoAssign(w.ds, { ...pod('a'), node: 'n1' }, w.options);
    assert.ok(a.ok && a.ipv4);
    const before = await w.ds.blocks.get(a.ipv4.block);
    const item = { address: a.ipv4.address, handle: 'net.a.eth0' };
    const stale = await releaseAddresses(
      w.ds,
      [{ ...item, sequence: a.ipv4.sequence - 1 }],
      { node: 'n1' },
      w.options,
    );
    assert.equal(stale.released.length, 0);
    assert.equal(stale.refused.length, 1);
    assert.deepEqual(await w.ds.blocks.get(a.ipv4.block), before, 'block not written');
    const exact = await releaseAddresses(
      w.ds,
      [{ ...item, sequence: a.ipv4.sequence }],
      { node: 'n1' },
      w.options,
    );
    assert.equal(exact.released.length, 1);
  });

  it('identity is handle + pod UID: another UID cannot release', async () => {
    const w = world();
    await autoAssign(w.ds, { ...pod('a'), node: 'n1' }, w.options);
    assert.equal(
      (await releaseByHandle(w.ds, 'net.a.eth0', { podUID: 'uid-other' }, w.options)).released.length,
      0,
    );
    assert.equal(
      (await releaseByHandle(w.ds, 'net.a.eth0', { podUID: 'uid-a' }, w.options)).released.length,
      1,
    );
  });

  it('a node releases only its own allocations of the handle: one planted by another node is left', async () => {
    const w = world();
    const a = await autoAssign(w.ds, { ...pod('a'), node: 'n1' }, w.options);
    assert.ok(a.ok && a.ipv4);
    // another node's credential adds an allocation of its own, carrying n1's pod's handle, to n1's block
    const block = (await w.ds.blocks.get(a.ipv4.block))!;
    const planted = {
      ...block.spec.allocations[String(a.ipv4.ordinal)]!,
      node: 'n2',
      sequence: block.spec.sequence + 1,
    };
    await w.ds.blocks.update({
      ...block,
      spec: {
        ...block.spec,
        sequence: block.spec.sequence + 1,
        allocations: { ...block.spec.allocations, [String(a.ipv4.ordinal + 1)]: planted },
      },
    });
    const r = await releaseByHandle(w.ds, 'net.a.eth0', { node: 'n1', podUID: 'uid-a' }, w.options);
    assert.deepEqual(
      r.released.map((x) => x.address),
      [a.ipv4.address],
    );
    assert.deepEqual(r.refused, []);
    const after = (await w.ds.blocks.get(a.ipv4.block))!;
    assert.deepEqual(
      Object.values(after.spec.allocations),
      [planted],
      'the planted allocation is not written',
    );
  });

  it('releasing what is not there is success (empty result)', async () => {
    const w = world();
    assert.deepEqual(await releaseByHandle(w.ds, 'net.ghost.eth0', { node: 'n1' }, w.options), {
      released: [],
      refused: [],
    });
  });

  it('an exact address release by (address, handle, sequence) frees only that address', async () => {
    const w = world({ pools: [pool('v4', { cidr: '10.5.0.0/16' }), pool('v6', { cidr: 'fd00:5::/64' })] });
    const a = await autoAssign(w.ds, { ...pod('a'), node: 'n1', ipv6: true }, w.options);
    assert.ok(a.ok && a.ipv4 && a.ipv6);
    const done = await releaseAddresses(
      w.ds,
      [{ address: a.ipv6.address, handle: 'net.a.eth0', sequence: a.ipv6.sequence }],
      { node: 'n1' },
      w.options,
    );
    assert.deepEqual(
      done.released.map((r) => r.address),
      [a.ipv6.address],
    );
    assert.deepEqual(
      (await findByHandle(w.ds, 'net.a.eth0')).map((r) => r.address),
      [a.ipv4.address],
    );
  });

  it("GC releases the node's allocations of the network that no valid attachment names", async () => {
    const w = world();
    for (const id of ['keep', 'drop1', 'drop2'])
      await autoAssign(w.ds, { ...pod(id), network: 'net', node: 'n1' }, w.options);
    await autoAssign(w.ds, { handle: 'net.x.other.eth0', network: 'net.x', node: 'n1' }, w.options);
    await autoAssign(w.ds, { ...pod('elsewhere'), network: 'net', node: 'n2' }, w.options);
    const done = await releaseForGC(
      w.ds,
      { node: 'n1', network: 'net', validAttachments: [{ containerID: 'keep', ifname: 'eth0' }] },
      w.options,
    );
    assert.deepEqual(done.released.map((r) => r.allocation.handle).sort(), [
      'net.drop1.eth0',
      'net.drop2.eth0',
    ]);
    assert.equal((await findByHandle(w.ds, 'net.x.other.eth0')).length, 1, 'network "net.x" untouched');
    assert.equal((await findByHandle(w.ds, 'net.elsewhere.eth0')).length, 1, 'other node untouched');
  });
});

describe('releaseIdleBlock', () => {
  it('a block written after it was read survives (delete preconditions)', async () => {
    const w = world({
      pools: [pool('p', { cidr: '10.7.0.0/24', blockSize: 30 })],
      config: { emptyBlockReleaseSeconds: 0 },
    });
    for (const id of ['a', 'b']) await autoAssign(w.ds, { ...pod(id), node: 'n1' }, w.options);
    await releaseByHandle(w.ds, 'net.b.eth0', { node: 'n1' }, w.options);
    const stale = await w.ds.blocks.list();
    const target = stale.find((b) => Object.keys(b.spec.allocations).length === 0)!;
    await w.ds.blocks.update({ ...target, spec: { ...target.spec, sequence: target.spec.sequence + 1 } });
    assert.equal(await releaseIdleBlock(w.ds, target, w.options), false);
    assert.ok(await w.ds.blocks.get(target.metadata.name));
  });
});

describe('validatePool', () => {
  it('rejects overlap with another pool, naming it', async () => {
    const w = world({ pools: [pool('a', { cidr: '10.30.0.0/16' })] });
    const got = await validatePool(w.ds, pool('b', { cidr: '10.30.128.0/17' }));
    assert.ok(!got.ok && got.message.includes('IPPool "a"'));
  });
  it('rejects the same CIDR with another block size while old blocks exist, naming a block', async () => {
    const w = world({ pools: [pool('a', { cidr: '10.31.0.0/16' })] });
    await autoAssign(w.ds, { ...pod('x'), node: 'n1' }, w.options);
    await w.ds.pools.delete('a');
    const got = await validatePool(w.ds, pool('a', { cidr: '10.31.0.0/16', blockSize: 28 }));
    assert.ok(
      !got.ok && /overlaps IPAMBlock "10-31-[0-9-]+-26" of block size 26/.test(got.message),
      JSON.stringify(got),
    );
    assert.deepEqual(await validatePool(w.ds, pool('a', { cidr: '10.31.0.0/16', blockSize: 26 })), {
      ok: true,
    });
  });
});

describe('releaseNodeBlocks (node deleted)', () => {
  it('deletes the empty blocks and leaves blocks with allocations unowned and borrowable', async () => {
    const w = world({ pools: [pool('p', { cidr: '10.8.0.0/24', blockSize: 30 })] });
    for (const id of ['a', 'b']) await autoAssign(w.ds, { ...pod(id), node: 'n1' }, w.options);
    await releaseByHandle(w.ds, 'net.a.eth0', { node: 'n1' }, w.options);
    const done = await releaseNodeBlocks(w.ds, 'n1', w.options);
    assert.equal(done.deleted.length, 1);
    assert.equal(done.unowned.length, 1);
    const left = await w.ds.blocks.get(done.unowned[0]!);
    assert.equal(left?.spec.affinity, null);
    assert.deepEqual(await w.problems(), []);
    await releaseByHandle(w.ds, 'net.b.eth0', {}, w.options);
    assert.equal(
      await w.ds.blocks.get(done.unowned[0]!),
      undefined,
      'an unowned block goes with its last allocation',
    );
  });
});

describe('releaseAddresses: entries with nothing to release', () => {
  it('are returned in `gone` (not released, not refused)', async () => {
    const w = world();
    const a = await autoAssign(w.ds, { ...pod('a'), node: 'n1' }, w.options);
    const b = await autoAssign(w.ds, { ...pod('b'), node: 'n1' }, w.options);
    assert.ok(a.ok && a.ipv4 && b.ok && b.ipv4);
    const items = [
      { address: a.ipv4.address, handle: 'net.a.eth0', sequence: a.ipv4.sequence }, // released
      { address: b.ipv4.address, handle: 'net.other.eth0' }, // held by another handle
      { address: '10.244.200.9', handle: 'net.a.eth0' }, // no block there
      { address: a.ipv4.address, handle: 'net.a.eth0', sequence: a.ipv4.sequence }, // already freed
      { address: 'not-an-ip', handle: 'net.a.eth0' },
    ];
    const done = await releaseAddresses(w.ds, items, { node: 'n1' }, w.options);
    assert.deepEqual(
      done.released.map((r) => r.address),
      [a.ipv4.address],
    );
    assert.deepEqual(done.refused, []);
    assert.deepEqual(done.gone, items.slice(1));
    const byBlock = await releaseAddresses(
      w.ds,
      [{ address: a.ipv4.address, handle: 'net.a.eth0', block: a.ipv4.block }],
      {},
      w.options,
    );
    assert.deepEqual(byBlock.gone, [{ address: a.ipv4.address, handle: 'net.a.eth0', block: a.ipv4.block }]);
  });
});

// Found by a break-it test: hand-made blocks and bad node names must not throw or leave blocks.
describe('bad input from outside the allocator', () => {
  const pools = [pool('v4', { cidr: '10.20.0.0/16' })];
  it('a corrupted block (non-ordinal and out-of-range keys) does not break release or lookup', async () => {
    const w = world({ pools });
    const ok = await autoAssign(w.ds, { ...pod('a'), node: 'n1' }, w.options);
    assert.ok(ok.ok && ok.ipv4);
    const [block] = await w.ds.blocks.list();
    assert.ok(block);
    const bad = { handle: 'net.a.eth0', node: 'n1', allocatedAt: '2026-11-29T08:00:00Z', sequence: 1 };
    await w.ds.blocks.update({
      ...block,
      spec: { ...block.spec, allocations: { ...block.spec.allocations, abc: bad, '9999': bad } },
    });
    const found = await findByHandle(w.ds, 'net.a.eth0', { node: 'n1' });
    assert.deepEqual(
      found.map((a) => a.address),
      [ok.ipv4.address],
    );
    const released = await releaseByHandle(w.ds, 'net.a.eth0', { node: 'n1' });
    assert.deepEqual(
      released.released.map((a) => a.address),
      [ok.ipv4.address],
    );
    const after = await w.ds.blocks.get(block.metadata.name);
    assert.deepEqual(after?.spec.allocations, {}, 'the corrupted entries of the handle are removed too');
  });
  for (const [title, node] of [
    ['an empty node name', ''],
    ['a node name over 253 characters', 'n'.repeat(254)],
  ] as const) {
    it(`${title} is refused before any block is claimed`, async () => {
      const w = world({ pools });
      const auto = await autoAssign(w.ds, { ...pod('a'), node }, w.options);
      const fixed = await assignIP(w.ds, { ...pod('b'), node, addresses: ['10.20.5.10'] }, w.options);
      assert.ok(!auto.ok && auto.reason === 'NotAllowed', JSON.stringify(auto));
      assert.ok(!fixed.ok && fixed.reason === 'NotAllowed', JSON.stringify(fixed));
      assert.deepEqual(await w.ds.blocks.list(), []);
    });
  }
});
