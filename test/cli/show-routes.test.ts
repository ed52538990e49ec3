// ipamctl show --node: which of the node's blocks other nodes cannot route to, and why — by
// core's rule (a node needs an InternalIP of each family it has blocks of), the one the agents'
// route planner applies; a node without an IPAMNode, and a block its IPAMNode does not list.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mustParseCidr, newBlock, planIPAMNodes } from 'blockipam/core';
import type { IPAMBlock, IPAMNode, IPPool } from 'blockipam/core';
import { nodeRouting } from '../../cli/show/routes.ts';

const pools: IPPool[] = [
  { metadata: { name: 'p4', creationTimestamp: '2026-11-01T00:00:00Z' }, spec: { cidr: '10.0.0.0/16' } },
  { metadata: { name: 'p6', creationTimestamp: '2026-11-01T00:00:00Z' }, spec: { cidr: 'fd00::/64' } },
];
const block = (cidr: string, pool: string): IPAMBlock =>
  newBlock({ cidr: mustParseCidr(cidr), pool, node: 'n1', nowMs: Date.parse('2026-12-01T08:00:00Z') });
const blocks = [block('10.0.0.64/26', 'p4'), block('fd00::40/122', 'p6')];
/** n1's IPAMNode as the controller writes it, n1 having these InternalIPs. */
const ipamNodeOf = (...internal: string[]): IPAMNode => {
  const node = {
    metadata: { name: 'n1' },
    status: { addresses: internal.map((address) => ({ type: 'InternalIP', address })) },
  };
  const spec = planIPAMNodes(blocks, pools, [node]).specs.get('n1');
  assert.ok(spec);
  return { metadata: { name: 'n1' }, spec };
};

void describe('nodeRouting', () => {
  void it('no IPv6 InternalIP: the IPv6 block is named, with the family and the fix', () => {
    const r = nodeRouting({ node: 'n1', ipamNode: ipamNodeOf('192.0.2.1'), affine: blocks });
    assert.deepEqual(r.addresses, ['192.0.2.1']);
    assert.deepEqual(
      r.unrouted.map((u) => [u.block, u.dst, u.family, u.reason]),
      [['fd00--40-122', 'fd00::40/122', 6, 'no-internal-ip']],
    );
    assert.match(
      r.unrouted[0]!.message,
      /^node n1 has no IPv6 InternalIP .*give the node an IPv6 InternalIP/,
    );
  });
  void it('both families: every block routed', () => {
    const r = nodeRouting({ node: 'n1', ipamNode: ipamNodeOf('192.0.2.1', 'fd0f::1'), affine: blocks });
    assert.deepEqual(r.unrouted, []);
  });
  void it('no IPAMNode: no block is routed yet', () => {
    const r = nodeRouting({ node: 'n1', ipamNode: undefined, affine: blocks });
    assert.equal(r.ipamNode, false);
    assert.deepEqual(
      r.unrouted.map((u) => u.reason),
      ['no-ipamnode', 'no-ipamnode'],
    );
  });
  void it('a block its IPAMNode does not list (untrusted, or claimed a moment ago)', () => {
    const extra = block('10.0.1.0/26', 'p4');
    const r = nodeRouting({
      node: 'n1',
      ipamNode: ipamNodeOf('192.0.2.1', 'fd0f::1'),
      affine: [...blocks, extra],
    });
    assert.deepEqual(
      r.unrouted.map((u) => [u.block, u.reason]),
      [['10-0-1-0-26', 'not-in-ipamnode']],
    );
  });
});
