// Frozen blocks (core/block/frozen.ts) in the allocator: trusted — routed, releasable — but never
// allocated from, no room and no count against maxBlocksPerNode (the node claims another), a
// static address in one refused naming the block and why, releases in one still working, and a
// release of a block whose own sequence is unsafe writing the repaired sequence.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  assignIP,
  autoAssign,
  checkBlockInvariants,
  freezesOf,
  isSafeSequence,
  loadSnapshot,
  mustParseCidr,
  newBlock,
  nodeHeadroom,
  releaseByHandle,
  repairedSequence,
  withBlocks,
} from 'blockipam/core';
import type { FreezeReason, IPAMBlock, IPAMConfigSpec } from 'blockipam/core';
import { poolStatus } from 'blockipam/core/node-ipam';
import { claimBlock } from '../../core/allocator/claim.ts';
import { contextOf } from '../../core/allocator/context.ts';
import { pod, pool, T0, world } from './fixtures.ts';
import type { World } from './fixtures.ts';

const P = pool('p', { cidr: '10.14.0.0/24', blockSize: 28 });
const FROZEN = '10-14-0-0-28';

/** Each way a block is frozen, applied to a block as core wrote it. */
const FREEZES: readonly { reason: FreezeReason; what: string; freeze: (b: IPAMBlock) => void }[] = [
  {
    reason: 'terminating',
    what: 'a deletionTimestamp',
    freeze: (b) => void (b.metadata.deletionTimestamp = '2026-11-29T07:00:00Z'),
  },
  {
    reason: 'finalizers',
    what: 'a finalizer',
    freeze: (b) => void (b.metadata.finalizers = ['example.com/hold']),
  },
  {
    reason: 'owner-references',
    what: 'an ownerReference',
    freeze: (b) =>
      void (b.metadata.ownerReferences = [{ apiVersion: 'v1', kind: 'Node', name: 'n1', uid: 'u1' }]),
  },
  {
    reason: 'unsafe-sequence',
    what: 'spec.sequence above 2^52',
    freeze: (b) => void (b.spec.sequence = 2 ** 52 + 8),
  },
  {
    reason: 'unsafe-sequence',
    what: "an allocation's sequence above 2^52",
    freeze: (b) => {
      const [key, allocation] = Object.entries(b.spec.allocations)[0]!;
      b.spec.allocations[key] = { ...allocation, sequence: 2 ** 52 + 8 };
    },
  },
];

/** Block 10.14.0.0/28 of pool p claimed by `node` for 10.14.0.5 (handle of pod "held"), then frozen. */
async function seedFrozen(w: World, node: string, freeze: (b: IPAMBlock) => void): Promise<IPAMBlock> {
  const got = await assignIP(w.ds, { ...pod('held'), node, addresses: ['10.14.0.5'] }, w.options);
  assert.ok(got.ok, JSON.stringify(got));
  const block = structuredClone((await w.ds.blocks.get(FROZEN))!);
  freeze(block);
  return w.ds.blocks.update(block);
}

void describe('frozen blocks: allocation', () => {
  for (const { reason, what, freeze } of FREEZES)
    void it(`${what}: never allocated from; at maxBlocksPerNode 1 the node claims another`, async () => {
      // strictAffinity: no borrowing, so the address must come from a block n1 claims now
      const w = world({ pools: [P], config: { maxBlocksPerNode: 1, strictAffinity: true } });
      const frozen = await seedFrozen(w, 'n1', freeze);
      assert.equal(freezesOf(frozen)[0]?.reason, reason);
      const out = await autoAssign(w.ds, { ...pod('a'), node: 'n1' }, w.options);
      assert.ok(out.ok, JSON.stringify(out));
      assert.notEqual(out.ipv4?.block, FROZEN);
      assert.deepEqual(Object.keys((await w.ds.blocks.get(FROZEN))!.spec.allocations), ['5']);
    });

  void it("another node's frozen block is not borrowed from", async () => {
    // no claims allowed, the only room is in n2's finalizer-frozen block
    const w = world({ pools: [P], config: { autoAllocateBlocks: false } });
    await seedFrozen(w, 'n2', FREEZES[1]!.freeze);
    const out = await autoAssign(w.ds, { ...pod('a'), node: 'n1' }, w.options);
    assert.equal(out.ok, false, JSON.stringify(out));
  });

  for (const { reason, what, freeze } of FREEZES)
    void it(`${what}: a static address in it is refused, naming the block and "${reason}"`, async () => {
      const w = world({ pools: [P] });
      await seedFrozen(w, 'n1', freeze);
      const out = await assignIP(w.ds, { ...pod('b'), node: 'n1', addresses: ['10.14.0.6'] }, w.options);
      assert.equal(out.ok, false);
      assert.equal(out.ok ? '' : out.reason, 'NotAllowed');
      assert.match(
        out.ok ? '' : out.message,
        new RegExp(`^10\\.14\\.0\\.6: block ${FROZEN} is frozen .*${reason}: `),
      );
    });

  void it('a claim that meets a frozen block of its own node (a stale region LIST) moves on', async () => {
    // n1's claim in a clean store lands on CIDR c; here c holds n1's frozen block the LIST misses
    const probe = world({ pools: [P] });
    const snapshot = await loadSnapshot(probe.ds);
    const first = await claimBlock(contextOf(probe.ds, probe.options), snapshot.usable[0]!, 'n1', []);
    assert.ok(first && first !== 'limit');
    const w = world({ pools: [P] });
    const frozen = newBlock({ cidr: mustParseCidr(first.spec.cidr), pool: 'p', node: 'n1', nowMs: T0 });
    frozen.metadata.finalizers = ['example.com/hold'];
    await w.ds.blocks.create(frozen);
    const store = w.ds.blocks;
    const blocks = new Proxy(store, {
      get: (target, key) => {
        if (key === 'listMetadata') return () => Promise.resolve([]);
        const value: unknown = Reflect.get(target, key);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const stale = withBlocks(w.ds, blocks);
    const got = await claimBlock(contextOf(stale, w.options), snapshot.usable[0]!, 'n1', []);
    assert.ok(got && got !== 'limit', JSON.stringify(got));
    assert.notEqual(got.metadata.name, frozen.metadata.name);
  });

  void it('headroom: a frozen block is no room and does not count against maxBlocksPerNode', async () => {
    // n1 holds one block, frozen, with 12 free ordinals: free 0, still claimable at the limit 1
    const w = world({ pools: [P] });
    const frozen = await seedFrozen(w, 'n1', FREEZES[0]!.freeze);
    const [room] = nodeHeadroom({
      pools: [P],
      nodes: [{ metadata: { name: 'n1' } }],
      blocks: [frozen],
      settings: { minFreeAddressesPerNode: 16, maxBlocksPerNode: 1, autoAllocateBlocks: true },
      unclaimedBlocks: new Map([['p', 15n]]),
    });
    assert.deepEqual(
      [room?.free, room?.blocks, room?.short, room?.cannotClaim],
      [0, 1, undefined, undefined],
    );
  });

  const statusCases: [string, IPAMConfigSpec, 'ready' | 'notReady'][] = [
    // no claims, no borrowing: n1's only block is frozen, so an ADD could not get an address
    ['no room in it', { autoAllocateBlocks: false, strictAffinity: true }, 'notReady'],
    // at maxBlocksPerNode 1 the frozen block does not count: n1 may claim, so an ADD would succeed
    ['not counted against maxBlocksPerNode', { maxBlocksPerNode: 1, strictAffinity: true }, 'ready'],
  ];
  for (const [title, config, kind] of statusCases)
    void it(`STATUS: a frozen block of the node is ${title}`, async () => {
      const w = world({ pools: [P], config });
      await seedFrozen(w, 'n1', FREEZES[1]!.freeze);
      const out = await poolStatus(w.ds, {
        node: 'n1',
        families: [4],
        pools: [],
        snapshot: await loadSnapshot(w.ds),
        nodeLabels: {},
      });
      assert.equal(out.kind, kind, JSON.stringify(out));
    });
});

void describe('frozen blocks: releases', () => {
  for (const { what, freeze } of FREEZES)
    void it(`${what}: a release in it succeeds`, async () => {
      const w = world({ pools: [P] });
      await seedFrozen(w, 'n1', freeze);
      const out = await releaseByHandle(w.ds, pod('held').handle, { node: 'n1' }, w.options);
      assert.deepEqual(
        out.released.map((a) => a.address),
        ['10.14.0.5'],
      );
      assert.deepEqual((await w.ds.blocks.get(FROZEN))?.spec.allocations, {});
    });

  void it('a release in a block whose spec.sequence is unsafe writes the repaired sequence', async () => {
    const w = world({ pools: [P] });
    const before = await seedFrozen(w, 'n1', FREEZES[3]!.freeze);
    w.now.ms += 5000;
    await releaseByHandle(w.ds, pod('held').handle, { node: 'n1' }, w.options);
    const after = (await w.ds.blocks.get(FROZEN))!;
    assert.equal(after.spec.sequence, repairedSequence(before, w.now.ms));
    assert.equal(after.spec.sequence, w.now.ms + 1);
    assert.ok(isSafeSequence(after.spec.sequence));
    assert.deepEqual(freezesOf(after), []);
  });
});

describe('a freed entry dated in the future, as the invariant checker reads it', () => {
  it('is reported as in the future, and a release after it (dated now) is not out of order', () => {
    const block = newBlock({ cidr: mustParseCidr('10.14.0.0/28'), pool: 'p', node: 'n1', nowMs: T0 });
    block.spec.freed = [
      { ordinal: 3, releasedAt: '2099-01-01T00:00:00Z' },
      { ordinal: 4, releasedAt: new Date(T0 + 1000).toISOString().replace(/\.\d+Z$/, 'Z') },
    ];
    const problems = checkBlockInvariants(block, { nowMs: T0 + 2000 });
    assert.deepEqual(
      problems.filter((p) => /order|future/.test(p)),
      ['IPAMBlock 10-14-0-0-28: freed ordinal 3 releasedAt 2099-01-01T00:00:00Z is in the future'],
    );
  });
});
