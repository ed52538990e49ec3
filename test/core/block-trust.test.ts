// Which blocks the data path trusts (core/allocator/block-trust.ts): the rules in order, the
// attack shapes of issue 23, D1, overlapping pools (older block wins), and the cost over
// thousands of blocks.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifyBlocks, nodeLabel, trustedAffine } from 'blockipam/core';
import type { IPAMBlock, IPPool } from 'blockipam/core';
import { LATE, MAIN, shapedBlock as block, VICTIM } from './block-shapes.ts';
import type { BlockShape as Shape } from './block-shapes.ts';
import { pool } from './fixtures.ts';

const SIX = pool('six', { cidr: 'fd00::/112' }, '2026-11-01T00:00:00Z');
const OFF = pool('off', { cidr: '10.245.0.0/16', disabled: true }, '2026-11-01T00:00:00Z');

/** "name: reason" for the ignored blocks, "name" alone for the trusted ones, sorted. */
function verdicts(blocks: IPAMBlock[], pools: IPPool[]): string[] {
  const { trusted, ignored } = classifyBlocks(blocks, pools);
  return [
    ...trusted.map((b) => b.metadata.name),
    ...ignored.map((i) => `${i.block.metadata.name}: ${i.reason}`),
  ].sort();
}

void describe('classifyBlocks', () => {
  const cases: { name: string; blocks: Shape[]; pools?: IPPool[]; want: string[] }[] = [
    {
      // blocks of both families as the allocator writes them, one with a borrowed address
      name: 'well-formed blocks are trusted',
      blocks: [
        VICTIM,
        { cidr: '10.244.1.0/26', node: 'node-1', allocations: { 3: 'node-2' } },
        { cidr: 'fd00::40/122', pool: 'six' },
      ],
      want: ['10-244-1-0-26', '10-244-88-192-26', 'fd00--40-122'],
    },
    {
      // D1: node-1 creates an unowned /28 inside node-2's /26 holding 10.244.88.198 for itself
      name: "attack: unowned /28 inside another node's /26",
      blocks: [
        VICTIM,
        {
          cidr: '10.244.88.192/28',
          node: null,
          allocations: { 6: 'node-1' },
          created: '2026-12-02T00:00:00Z',
        },
      ],
      want: ['10-244-88-192-26', '10-244-88-192-28: size-mismatch'],
    },
    {
      // D1: a /27 affine to node-1 over the first half of node-2's /26
      name: 'attack: /27 affine to the author',
      blocks: [VICTIM, { cidr: '10.244.88.192/27', node: 'node-1', created: '2026-12-02T00:00:00Z' }],
      want: ['10-244-88-192-26', '10-244-88-192-27: size-mismatch'],
    },
    {
      // D1's DoS: labels say "affine to node-2" on a block whose spec is node-1's
      name: "attack: labels claim another node's affinity",
      blocks: [{ cidr: '10.244.5.0/26', node: 'node-1', labels: { [nodeLabel('node-2')]: 'affine' } }],
      want: ['10-244-5-0-26: labels-mismatch'],
    },
    {
      // an unowned block labelled affine to node-2 (spec affinity null)
      name: 'attack: unowned block labelled affine',
      blocks: [{ cidr: '10.244.5.0/26', node: null, labels: { [nodeLabel('node-2')]: 'affine' } }],
      want: ['10-244-5-0-26: labels-mismatch'],
    },
    {
      // the overlapping pool's size makes the /28 valid alone: the older /26 still wins
      name: 'attack through an overlapping pool: older block wins',
      pools: [MAIN, LATE],
      blocks: [
        VICTIM,
        {
          cidr: '10.244.88.192/28',
          pool: 'late',
          node: null,
          allocations: { 6: 'node-1' },
          created: '2026-12-02T00:00:00Z',
        },
      ],
      want: ['10-244-88-192-26', '10-244-88-192-28: overlap'],
    },
    {
      // the rule is age, not pool rank: the older block is kept whichever pool it is of
      name: 'overlapping pools: the older block wins even from the shadowed pool',
      pools: [MAIN, LATE],
      blocks: [
        { ...VICTIM, created: '2026-12-02T00:00:00Z' },
        { cidr: '10.244.88.192/28', pool: 'late', node: 'node-1', created: '2026-12-01T00:00:00Z' },
      ],
      want: ['10-244-88-192-26: overlap', '10-244-88-192-28'],
    },
    {
      // equal creationTimestamps (seconds): the name decides, the same on every node
      name: 'same creation second: name order',
      pools: [MAIN, LATE],
      blocks: [VICTIM, { cidr: '10.244.88.208/28', pool: 'late', node: 'node-1' }],
      want: ['10-244-88-192-26', '10-244-88-208-28: overlap'],
    },
    {
      // only overlap with a trusted block counts: B loses to the older A, so C (inside B, not in A) stays
      name: 'overlap is with trusted blocks only',
      pools: [MAIN, pool('wide', { cidr: '10.244.88.0/24', blockSize: 24 }, '2026-11-20T00:00:00Z')],
      blocks: [
        { cidr: '10.244.88.0/26', created: '2026-12-01T00:00:00Z' },
        { cidr: '10.244.88.0/24', pool: 'wide', created: '2026-12-02T00:00:00Z' },
        { cidr: '10.244.88.64/26', created: '2026-12-03T00:00:00Z' },
      ],
      want: ['10-244-88-0-24: overlap', '10-244-88-0-26', '10-244-88-64-26'],
    },
    {
      // a shadowed pool's block that overlaps nothing is routed like any other
      name: 'shadowed pool, no overlap: trusted',
      pools: [MAIN, LATE],
      blocks: [{ cidr: '10.244.88.0/28', pool: 'late', node: 'node-3' }],
      want: ['10-244-88-0-28'],
    },
    {
      // a disabled pool's blocks still hold pods: trusted (routes, releases)
      name: 'disabled pool: trusted',
      pools: [MAIN, OFF],
      blocks: [{ cidr: '10.245.0.0/26', pool: 'off' }],
      want: ['10-245-0-0-26'],
    },
    {
      // no pool holds it: no pod network (a route could take the nodes' own range)
      name: 'outside every pool',
      blocks: [{ cidr: '10.99.0.0/26' }],
      want: ['10-99-0-0-26: outside-pools'],
    },
    {
      // inside `main` but labelled with a pool that does not exist
      name: 'pool label names no pool',
      blocks: [{ cidr: '10.244.7.0/26', pool: 'ghost' }],
      want: ['10-244-7-0-26: pool-mismatch'],
    },
    {
      // labelled `off` (10.245/16) while lying in `main`
      name: 'pool label names a pool that does not contain it',
      pools: [MAIN, OFF],
      blocks: [{ cidr: '10.244.7.0/26', pool: 'off' }],
      want: ['10-244-7-0-26: pool-mismatch'],
    },
    {
      // no pool label at all
      name: 'pool label missing',
      blocks: [{ cidr: '10.244.7.0/26', labels: { 'ipam.blockipam.io/pool': '' } }],
      want: ['10-244-7-0-26: pool-mismatch'],
    },
    {
      // a borrower's label says something else than `borrowed`: lookups by node would misread it
      name: 'borrowed label wrong',
      blocks: [
        { cidr: '10.244.7.0/26', allocations: { 5: 'node-3' }, labels: { [nodeLabel('node-3')]: 'gone' } },
      ],
      want: ['10-244-7-0-26: labels-mismatch'],
    },
    {
      // any node may add a label "borrowed" to any block (the policy cannot tell whose key it is):
      // a foreign one must not cut the owner's block off (a reviewer's probe did, before)
      name: 'attack: a foreign borrowed label on another node’s block',
      blocks: [{ cidr: '10.244.7.0/26', node: 'node-2', labels: { [nodeLabel('node-1')]: 'borrowed' } }],
      want: ['10-244-7-0-26'],
    },
    {
      // a wrong family or region label
      name: 'family label forged',
      blocks: [{ cidr: '10.244.7.0/26', labels: { 'ipam.blockipam.io/ip-family': '6' } }],
      want: ['10-244-7-0-26: labels-mismatch'],
    },
    {
      // labels users add (team=…) are theirs: not a mismatch
      name: 'user labels are allowed',
      blocks: [{ cidr: '10.244.7.0/26', labels: { team: 'net', 'example.com/owner': 'ops' } }],
      want: ['10-244-7-0-26'],
    },
  ];
  for (const c of cases)
    void it(c.name, () => {
      assert.deepEqual(verdicts(c.blocks.map(block), c.pools ?? [MAIN, SIX]), c.want);
    });

  void it('an unparseable spec.cidr is invalid-cidr', () => {
    // the CRD admits only masked CIDRs; a hand-made object in the memory store may not
    const b = block({ cidr: '10.244.7.0/26' });
    b.spec.cidr = '10.244.7.1/26';
    assert.deepEqual(verdicts([b], [MAIN]), ['10-244-7-0-26: invalid-cidr']);
  });

  void it('messages name the evidence', () => {
    // the overlap message names the older block the operator should keep
    const { ignored } = classifyBlocks(
      [block(VICTIM), block({ cidr: '10.244.88.192/28', pool: 'late', created: '2026-12-02T00:00:00Z' })],
      [MAIN, LATE],
    );
    assert.match(ignored[0]?.message ?? '', /overlaps the older IPAMBlock 10-244-88-192-26/);
    assert.equal(ignored[0]?.keptBlock?.metadata.name, '10-244-88-192-26');
  });

  void it('is O(n log n): 20,000 blocks with 10,000 overlapping attackers', () => {
    // a /26 per node and a /28 from the overlapping pool inside each: every /28 loses
    const wide = pool('wide', { cidr: '10.0.0.0/8', blockSize: 26 }, '2026-11-01T00:00:00Z');
    const small = pool('small', { cidr: '10.0.0.0/9', blockSize: 28 }, '2026-11-02T00:00:00Z');
    const blocks: IPAMBlock[] = [];
    for (let i = 0; i < 10_000; i++) {
      const base = `10.${(i >> 8) & 0xff}.${i & 0xff}`;
      blocks.push(block({ cidr: `${base}.0/26`, pool: 'wide', created: '2026-12-01T00:00:00Z' }));
      blocks.push(block({ cidr: `${base}.16/28`, pool: 'small', created: '2026-12-02T00:00:00Z' }));
    }
    const started = performance.now();
    const { trusted, ignored } = classifyBlocks(blocks, [wide, small]);
    const ms = performance.now() - started;
    assert.equal(trusted.length, 10_000);
    assert.equal(ignored.length, 10_000);
    // 5 s: ~50 ms on an idle core; a quadratic pass over 20,000 blocks takes minutes
    assert.ok(ms < 5_000, `took ${ms} ms`);
  });
});

void describe('trustedAffine', () => {
  void it('counts spec affinity of trusted blocks, never labels alone', () => {
    // one real block of node-2, one forged "affine to node-2" label, one wrong-size block
    const blocks = [
      block({ cidr: '10.244.1.0/26', node: 'node-2' }),
      block({ cidr: '10.244.2.0/26', node: 'node-1', labels: { [nodeLabel('node-2')]: 'affine' } }),
      block({ cidr: '10.244.3.0/27', node: 'node-2' }),
    ];
    assert.deepEqual(
      trustedAffine(blocks, [MAIN], 'node-2').map((b) => b.metadata.name),
      ['10-244-1-0-26'],
    );
  });
});

void describe('classifyBlocks remembers verdicts per block object and pool set', () => {
  void it('a changed pool set judges the same block object afresh', () => {
    const one = block({ cidr: '10.244.5.0/26', node: 'node-1' });
    assert.deepEqual(verdicts([one], [MAIN]), ['10-244-5-0-26']);
    // the same object, the pool now of /28 blocks (re-created): size-mismatch, not the remembered verdict
    const main28 = pool('main', { cidr: '10.244.0.0/16', blockSize: 28 }, '2026-11-01T00:00:00Z');
    assert.equal(classifyBlocks([one], [main28]).ignored[0]?.reason, 'size-mismatch');
    assert.equal(classifyBlocks([one], []).ignored[0]?.reason, 'outside-pools');
    assert.deepEqual(verdicts([one], [MAIN]), ['10-244-5-0-26']);
  });
});

void describe('classifyBlocks and the borrowed labels any node may change', () => {
  void it('a borrower’s label removed leaves the block trusted (ipamctl check reports the index)', () => {
    const b = block({ cidr: '10.244.7.0/26', node: 'node-2', allocations: { 5: 'node-3' } });
    const labels = { ...b.metadata.labels };
    delete labels[nodeLabel('node-3')];
    const stripped = { ...b, metadata: { ...b.metadata, labels } };
    assert.deepEqual(verdicts([stripped], [MAIN]), ['10-244-7-0-26']);
  });
});
