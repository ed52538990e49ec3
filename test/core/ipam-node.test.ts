// core's IPAMNode rule (pure): every Node gets a spec; InternalIPs per family in canonical text,
// IPv4 first; trusted affine blocks sorted by address; borrowed addresses (also in unowned
// blocks) as /32 and /128; untrusted blocks and blocks over a node address listed nowhere;
// sameIPAMNodeSpec ignores updatedAt.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { internalIPs, planIPAMNodes, sameIPAMNodeSpec } from 'blockipam/core';
import { block, node, pools } from '../agent/routes/fixtures.ts';

const POOLS = pools('10.0.0.0/16', 'fd00::/48');

void describe('planIPAMNodes', () => {
  void it('lists each node’s addresses, blocks and borrowed addresses', () => {
    const plan = planIPAMNodes(
      [
        block('10.0.1.0/26', 'a'),
        block('10.0.0.64/26', 'a', { 3: 'b', 4: 'a' }),
        block('fd00::40/122', 'b', { 5: 'a' }),
        block('10.0.2.0/26', null, { 9: 'b' }),
        block('10.0.3.0/26', 'gone', { 7: 'a' }),
      ],
      POOLS,
      [node('a', '2001:DB8::0a', '192.0.2.11'), node('b', '192.0.2.12'), node('c')],
    );
    assert.deepEqual(Object.fromEntries(plan.specs), {
      a: {
        addresses: ['192.0.2.11', '2001:db8::a'],
        blocks: ['10.0.0.64/26', '10.0.1.0/26'],
        borrowed: ['10.0.3.7/32', 'fd00::45/128'],
      },
      b: { addresses: ['192.0.2.12'], blocks: ['fd00::40/122'], borrowed: ['10.0.0.67/32', '10.0.2.9/32'] },
      c: { addresses: [], blocks: [], borrowed: [] },
    });
    assert.deepEqual([plan.ignored, plan.unrouted], [[], []]);
  });

  void it('routes no borrowed address outside its block or at a reserved ordinal', () => {
    // 100 is 10.0.1.100, in the next /26 (a route there would take that block's address); 0, 1
    // and 63 are the block's network, gateway and broadcast
    const plan = planIPAMNodes(
      [block('10.0.1.0/26', 'b', { 100: 'a', 0: 'a', 1: 'a', 63: 'a', 5: 'a' }), block('10.0.1.64/26', 'c')],
      POOLS,
      [node('a'), node('b'), node('c')],
    );
    assert.deepEqual(plan.specs.get('a')?.borrowed, ['10.0.1.5/32']);
  });

  void it('leaves out untrusted blocks and blocks holding a node address, and says why', () => {
    const plan = planIPAMNodes(
      [block('10.9.0.0/26', 'a', { 2: 'b' }), block('10.0.0.0/26', 'a'), block('10.0.0.64/26', 'b')],
      POOLS,
      [node('a', '192.0.2.11'), node('b', '10.0.0.70')],
    );
    assert.deepEqual(plan.specs.get('a')?.blocks, ['10.0.0.0/26']);
    assert.deepEqual(plan.specs.get('b'), { addresses: ['10.0.0.70'], blocks: [], borrowed: [] });
    assert.deepEqual(
      plan.ignored.map((i) => `${i.block.spec.cidr} ${i.reason}`),
      ['10.9.0.0/26 outside-pools'],
    );
    assert.deepEqual(
      plan.unrouted.map((u) => `${u.block.spec.cidr} ${u.node}`),
      ['10.0.0.64/26 b'],
    );
  });

  void it('internalIPs: the first of each family, never another address type', () => {
    assert.deepEqual(internalIPs(node('x', '192.0.2.1', '192.0.2.2', 'fd00::1')), ['192.0.2.1', 'fd00::1']);
    assert.deepEqual(internalIPs({ metadata: { name: 'y' } }), []);
  });

  void it('sameIPAMNodeSpec compares the lists in order and ignores updatedAt', () => {
    const spec = { addresses: ['192.0.2.1'], blocks: ['10.0.0.0/26'], borrowed: [] };
    assert.ok(sameIPAMNodeSpec(spec, { ...spec, updatedAt: '2026-12-01T00:00:00Z' }));
    assert.ok(!sameIPAMNodeSpec(spec, { ...spec, blocks: [] }));
    assert.ok(!sameIPAMNodeSpec(spec, undefined));
  });
});
