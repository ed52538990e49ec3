// PodCIDR pools (core/adopt/podcidr-blocks.ts, pools.ts isPodCIDRPool): the controller's plan of
// every node's podCIDR tiles as its blocks, and the allocator's rules in such a pool — no claim,
// no borrowing, no idle release, `podcidr` for the claims policy, `PodCIDRBlocks` for headroom.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  allocateOrdinal,
  assignIP,
  autoAssign,
  claimPoolsData,
  mustParseCidr,
  newBlock,
  planPodCIDRBlocks,
  planIPAMNodes,
  planUpkeep,
  snapshotOf,
} from 'blockipam/core';
import type { IPAMBlock, IPPool } from 'blockipam/core';
import { pod, pool, T0, world } from './fixtures.ts';

const PODCIDR_POOL = pool('kind', { cidr: '10.244.0.0/16', blockSize: 24, podCIDRBlocks: true });
const node = (name: string, ...podCIDRs: string[]) => ({ metadata: { name }, spec: { podCIDRs } });
const names = (blocks: readonly IPAMBlock[]) => blocks.map((b) => b.metadata.name);

describe('planPodCIDRBlocks', () => {
  const nodes = [node('n2', '10.244.2.0/24'), node('n1', '10.244.1.0/24', 'fd00:10:244:1::/64'), node('n3')];

  it('one block per /24 podCIDR, affine to its node, as core claims it; nothing for other pools', () => {
    for (const pools of [
      [PODCIDR_POOL],
      [{ ...PODCIDR_POOL, spec: { ...PODCIDR_POOL.spec, disabled: true } }],
    ]) {
      const plan = planPodCIDRBlocks({ nodes, pools, blocks: [], nowMs: T0 });
      assert.deepEqual(names(plan.create), ['10-244-1-0-24', '10-244-2-0-24']);
      assert.deepEqual(
        plan.create.map((b) => [b.spec.affinity, b.metadata.labels?.['ipam.blockipam.io/pool']]),
        [
          ['n1', 'kind'],
          ['n2', 'kind'],
        ],
      );
      assert.deepEqual(
        plan.create[0],
        newBlock({ cidr: mustParseCidr('10.244.1.0/24'), pool: 'kind', node: 'n1', nowMs: T0 }),
      );
      assert.deepEqual([plan.assign, plan.conflicts], [[], []]);
    }
    const plain = pool('plain', { cidr: '10.244.0.0/16', blockSize: 24 });
    assert.deepEqual(planPodCIDRBlocks({ nodes, pools: [plain], blocks: [], nowMs: T0 }).create, []);
  });

  it('tiles of /26 blocks; an existing own block is kept, an unowned one assigned, a foreign one a conflict', () => {
    const p26 = pool('kind', { cidr: '10.244.0.0/16', blockSize: 26, podCIDRBlocks: true });
    const blocks = [
      newBlock({ cidr: mustParseCidr('10.244.1.0/26'), pool: 'kind', node: 'n1', nowMs: T0 }),
      newBlock({ cidr: mustParseCidr('10.244.1.64/26'), pool: 'kind', node: null, nowMs: T0 }),
      newBlock({ cidr: mustParseCidr('10.244.1.128/26'), pool: 'kind', node: 'n2', nowMs: T0 }),
    ];
    const plan = planPodCIDRBlocks({ nodes: [node('n1', '10.244.1.0/24')], pools: [p26], blocks, nowMs: T0 });
    assert.deepEqual(names(plan.create), ['10-244-1-192-26']);
    assert.deepEqual(
      plan.assign.map((a) => [a.block.metadata.name, a.node]),
      [['10-244-1-64-26', 'n1']],
    );
    assert.equal(plan.conflicts.length, 1);
    assert.match(
      plan.conflicts[0]!.message,
      /IPAMBlock 10-244-1-128-26 in podCIDR 10\.244\.1\.0\/24 of node n1 is affine to node n2/,
    );
  });

  it('a podCIDR cut into more than 16 blocks, or smaller than a block, is a conflict; no block planned', () => {
    const p28 = pool('kind', { cidr: '10.244.0.0/16', blockSize: 28, podCIDRBlocks: true });
    const wide = planPodCIDRBlocks({
      nodes: [node('n1', '10.244.1.0/23')],
      pools: [p28],
      blocks: [],
      nowMs: T0,
    });
    assert.deepEqual(wide.create, []);
    assert.match(wide.conflicts[0]!.message, /would be 32 \/28 blocks \(at most 16\)/);
    const narrow = planPodCIDRBlocks({
      nodes: [node('n1', '10.244.1.0/25')],
      pools: [PODCIDR_POOL],
      blocks: [],
      nowMs: T0,
    });
    assert.match(narrow.conflicts[0]!.message, /is smaller than a \/24 block/);
  });

  it('once created, the plan is empty (idempotent)', () => {
    const first = planPodCIDRBlocks({ nodes, pools: [PODCIDR_POOL], blocks: [], nowMs: T0 });
    const again = planPodCIDRBlocks({ nodes, pools: [PODCIDR_POOL], blocks: first.create, nowMs: T0 + 1000 });
    assert.deepEqual([again.create, again.assign, again.conflicts], [[], [], []]);
  });
});

describe('the allocator in a podCIDR pool', () => {
  /** n1's /24 podCIDR block holding `used` allocations (ordinals from 2), and n2's, empty. */
  async function seeded(used: number) {
    const w = world({ pools: [PODCIDR_POOL] });
    let mine = newBlock({ cidr: mustParseCidr('10.244.1.0/24'), pool: 'kind', node: 'n1', nowMs: T0 });
    for (let ordinal = 2; ordinal < 2 + used; ordinal++)
      mine = allocateOrdinal(mine, ordinal, { handle: `h${ordinal}`, node: 'n1' }, T0)!.block;
    await w.ds.blocks.create(mine);
    await w.ds.blocks.create(
      newBlock({ cidr: mustParseCidr('10.244.2.0/24'), pool: 'kind', node: 'n2', nowMs: T0 }),
    );
    return w;
  }

  it("allocates from the node's podCIDR block, host-local's first address (.2)", async () => {
    const w = await seeded(0);
    const got = await autoAssign(w.ds, { ...pod('a'), node: 'n1' }, w.options);
    assert.ok(got.ok && got.ipv4);
    assert.equal(got.ipv4.address, '10.244.1.2');
    assert.equal(got.ipv4.gateway, '10.244.1.1');
  });

  it('a full podCIDR: no claim, no borrowing from another node’s podCIDR — the ADD fails', async () => {
    const w = await seeded(253); // .2 – .254: every assignable ordinal of the /24
    const got = await autoAssign(w.ds, { ...pod('a'), node: 'n1' }, w.options);
    assert.equal(got.ok, false);
    assert.deepEqual(names(await w.ds.blocks.list()), ['10-244-1-0-24', '10-244-2-0-24'], 'nothing claimed');
    const n2 = await w.ds.blocks.get('10-244-2-0-24');
    assert.deepEqual(n2?.spec.allocations, {}, 'nothing borrowed');
  });

  it('a static address: only in the node’s own podCIDR block — never borrowed, never claimed', async () => {
    const w = await seeded(0);
    const own = await assignIP(w.ds, { ...pod('s1'), node: 'n1', addresses: ['10.244.1.9'] }, w.options);
    assert.ok(own.ok && own.ipv4?.address === '10.244.1.9');
    const foreign = await assignIP(w.ds, { ...pod('s2'), node: 'n1', addresses: ['10.244.2.9'] }, w.options);
    assert.deepEqual(foreign.ok ? 'ok' : [foreign.reason, foreign.message], [
      'NotAllowed',
      `10.244.2.9: IPPool kind holds nodes' podCIDRs, and block 10-244-2-0-24 is node "n2"'s: a node takes only addresses of its own podCIDR there`,
    ]);
    const none = await assignIP(w.ds, { ...pod('s3'), node: 'n1', addresses: ['10.244.7.9'] }, w.options);
    assert.equal(none.ok ? 'ok' : none.reason, 'NotAllowed');
    assert.deepEqual(names(await w.ds.blocks.list()), ['10-244-1-0-24', '10-244-2-0-24'], 'nothing claimed');
  });

  it('the upkeep plan neither claims in it nor releases its idle blocks', () => {
    const snapshot = snapshotOf({ config: undefined, pools: [PODCIDR_POOL], reservations: [] }, T0);
    // two idle blocks of the node: the rule that keeps a node's last block keeps one, not both
    const idle = ['10.244.1.0/24', '10.244.9.0/24'].map((cidr) =>
      newBlock({ cidr: mustParseCidr(cidr), pool: 'kind', node: 'n1', nowMs: T0 - 86_400_000 }),
    );
    const plan = planUpkeep({ node: 'n1', nodeLabels: {}, snapshot, affine: idle, nowMs: T0 });
    assert.deepEqual([plan.claims, plan.releases], [[], []]);
    const plain = pool('kind', { cidr: '10.244.0.0/16', blockSize: 24 });
    const ordinary = snapshotOf({ config: undefined, pools: [plain], reservations: [] }, T0);
    const released = planUpkeep({ node: 'n1', nodeLabels: {}, snapshot: ordinary, affine: idle, nowMs: T0 });
    assert.equal(released.releases.length, 1, 'in an ordinary pool one of them goes');
    const none = planUpkeep({ node: 'n1', nodeLabels: {}, snapshot, affine: [], nowMs: T0 });
    assert.deepEqual(none.claims, [], 'no claim even with no block at all');
  });

  it("no /32 route for another node's allocation in a podCIDR block (core never borrows there)", () => {
    let n2 = newBlock({ cidr: mustParseCidr('10.244.2.0/24'), pool: 'kind', node: 'n2', nowMs: T0 });
    n2 = allocateOrdinal(n2, 7, { handle: 'h', node: 'n1' }, T0)!.block;
    const nodes = ['n1', 'n2'].map((name) => ({ metadata: { name } }));
    const routes = planIPAMNodes([n2], [PODCIDR_POOL], nodes);
    assert.deepEqual(routes.specs.get('n1')?.borrowed, []);
    assert.deepEqual(routes.specs.get('n2')?.blocks, ['10.244.2.0/24']);
    const plain = pool('kind', { cidr: '10.244.0.0/16', blockSize: 24 });
    assert.deepEqual(planIPAMNodes([n2], [plain], nodes).specs.get('n1')?.borrowed, ['10.244.2.7/32']);
  });

  it('the claims policy sees it as podcidr, not usable', () => {
    const plain: IPPool = pool('plain', { cidr: '10.245.0.0/16' });
    assert.deepEqual(claimPoolsData([PODCIDR_POOL, plain]), {
      kind: '10.244.0.0/16 24 podcidr',
      plain: '10.245.0.0/16 26 usable',
    });
  });
});
