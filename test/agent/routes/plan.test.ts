// The route planner (pure) over what the controller writes (every IPAMNode, from core's
// planIPAMNodes over the whole cluster) and the node's own blocks: block routes via the owner's
// InternalIP, blackholes for own blocks, host routes for borrowed addresses (every node but the
// borrower), node IP changes, nodes gone, IPv6, forged blocks never routed, and the refusal to
// plan before the informers synced or before the controller wrote this node's IPAMNode.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planIPAMNodes } from 'blockipam/core';
import type { IPAMBlock } from 'blockipam/core';
import { block, node, pools, routeView, type ClusterSeed } from './fixtures.ts';
import { planRoutes } from '../../../block-controller/agent/routes/index.ts';
import type { RouteNode } from '../../../block-controller/agent/routes/index.ts';

/** The pools every case's blocks lie in. */
const POOLS = pools('10.0.0.0/16', 'fd00::/48');
const view = (blocks: IPAMBlock[], nodes: RouteNode[], synced = true): ClusterSeed => ({
  synced,
  blocks,
  nodes,
  pools: POOLS,
});
const threeNodes = [node('a', '192.0.2.11'), node('b', '192.0.2.12'), node('c', '192.0.2.13')];

/** "dst via gateway" / "blackhole dst" lines of a plan, sorted, for compact expectations. */
function lines(v: ClusterSeed, me = 'a', blackholeOwnBlocks = true): string[] {
  const plan = planRoutes(routeView(v, me), { nodeName: me, blackholeOwnBlocks });
  assert.equal(plan.ready, true);
  return plan.ready
    ? plan.routes
        .map((r) => (r.type === 'blackhole' ? `blackhole ${r.dst}` : `${r.dst} via ${r.gateway}`))
        .sort()
    : [];
}

void describe('planRoutes', () => {
  const cases: { name: string; v: ClusterSeed; me?: string; want: string[] }[] = [
    {
      // another node's block goes via its InternalIP; our own is a blackhole
      name: 'blocks of three nodes, seen from a',
      v: view(
        [block('10.0.0.0/26', 'a'), block('10.0.0.64/26', 'b'), block('10.0.0.128/26', 'c')],
        threeNodes,
      ),
      want: ['10.0.0.128/26 via 192.0.2.13', '10.0.0.64/26 via 192.0.2.12', 'blackhole 10.0.0.0/26'],
    },
    {
      // a pod on c borrowed 10.0.0.70 from b's block: a needs a /32 to c
      name: 'borrowed address: a third node routes the /32 to the borrower',
      v: view([block('10.0.0.64/26', 'b', { 2: 'b', 6: 'c' })], threeNodes),
      want: ['10.0.0.64/26 via 192.0.2.12', '10.0.0.70/32 via 192.0.2.13'],
    },
    {
      // the block's owner needs the /32 too (its blackhole would swallow the address)
      name: 'borrowed address: the block owner routes the /32 to the borrower',
      v: view([block('10.0.0.64/26', 'b', { 6: 'c' })], threeNodes),
      me: 'b',
      want: ['10.0.0.70/32 via 192.0.2.13', 'blackhole 10.0.0.64/26'],
    },
    {
      // ptp's /32 to the veth serves the borrower's own pod: no host route there
      name: 'borrowed address: the borrower adds no host route',
      v: view([block('10.0.0.64/26', 'b', { 6: 'c' })], threeNodes),
      me: 'c',
      want: ['10.0.0.64/26 via 192.0.2.12'],
    },
    {
      // an unowned block with a live allocation: only the /32
      name: 'unowned block: host routes only',
      v: view([block('10.0.0.64/26', null, { 5: 'b' })], threeNodes),
      want: ['10.0.0.69/32 via 192.0.2.12'],
    },
    {
      // the node's InternalIP changed: routes follow it
      name: 'node IP change',
      v: view([block('10.0.0.64/26', 'b')], [node('a', '192.0.2.11'), node('b', '192.0.2.99')]),
      want: ['10.0.0.64/26 via 192.0.2.99'],
    },
    {
      // node b deleted, its block not yet released: no route (and the stale one goes)
      name: 'node gone',
      v: view(
        [block('10.0.0.64/26', 'b', { 3: 'b' }), block('10.0.0.128/26', 'c', { 4: 'b' })],
        [threeNodes[0]!, threeNodes[2]!],
      ),
      want: ['10.0.0.128/26 via 192.0.2.13'],
    },
    {
      // IPv6 blocks go via the IPv6 InternalIP (canonical text), borrowed /128 too
      name: 'IPv6',
      v: view(
        [block('fd00::40/122', 'b', { 3: 'c' }), block('fd00::/122', 'a')],
        [
          node('a', '192.0.2.11', '2001:db8::11'),
          node('b', '192.0.2.12', '2001:DB8:0::12'),
          node('c', '2001:db8::13'),
        ],
      ),
      want: ['blackhole fd00::/122', 'fd00::40/122 via 2001:db8::12', 'fd00::43/128 via 2001:db8::13'],
    },
    {
      // dual-stack node list, v4 block: the v4 InternalIP even when the v6 one is listed first
      name: 'dual stack: the InternalIP of the block family',
      v: view(
        [block('10.0.0.64/26', 'b')],
        [node('a', '192.0.2.11'), node('b', '2001:db8::12', '192.0.2.12')],
      ),
      want: ['10.0.0.64/26 via 192.0.2.12'],
    },
  ];
  for (const c of cases) void it(c.name, () => assert.deepEqual(lines(c.v, c.me), c.want));

  void it('reports what it cannot route: no InternalIP of the family; a node gone has no IPAMNode', () => {
    const plan = planRoutes(
      routeView(
        view(
          [block('10.0.0.64/26', 'gone'), block('fd00::40/122', 'b')],
          [node('a', '192.0.2.11'), node('b', '192.0.2.12')],
        ),
        'a',
      ),
      { nodeName: 'a' },
    );
    assert.ok(plan.ready);
    assert.deepEqual(plan.routes, []);
    assert.deepEqual(
      plan.skipped.map((s) => `${s.dst} ${s.node} ${s.why}`),
      ['fd00::40/122 b no-internal-ip'],
    );
  });

  void it('no blackholes when turned off', () => {
    assert.deepEqual(lines(view([block('10.0.0.0/26', 'a')], threeNodes), 'a', false), []);
  });

  void it('refuses to plan before the informers synced, without its own Node or its own IPAMNode', () => {
    const seed = view([block('10.0.0.64/26', 'b')], threeNodes);
    assert.deepEqual(planRoutes(routeView({ ...seed, synced: false }, 'a'), { nodeName: 'a' }), {
      ready: false,
      why: 'not-synced',
    });
    // an empty (but "synced") cache holds no Node for this node: not the real cluster
    assert.deepEqual(planRoutes(routeView(view([], []), 'a'), { nodeName: 'a' }), {
      ready: false,
      why: 'own-node-missing',
    });
    // the controller has not written this node's IPAMNode yet (fresh install, upgrade, controller
    // down since the node joined): no source to judge by, so no route is touched
    const v = routeView(seed, 'a');
    const withoutOwn = { ...v, ipamNodes: v.ipamNodes.filter((n) => n.metadata.name !== 'a') };
    assert.deepEqual(planRoutes(withoutOwn, { nodeName: 'a' }), {
      ready: false,
      why: 'own-ipamnode-missing',
    });
  });

  void it('labels each route with its reason, block and target node', () => {
    const plan = planRoutes(routeView(view([block('10.0.0.64/26', 'b', { 6: 'c' })], threeNodes), 'a'), {
      nodeName: 'a',
    });
    assert.ok(plan.ready);
    assert.deepEqual(
      plan.routes.map((r) => [r.reason, r.block, r.node]),
      [
        ['block', '10-0-0-64-26', 'b'],
        ['borrowed', undefined, 'c'],
      ],
    );
  });

  void it('routes no block outside every pool, and none holding a node address: reported by the controller', () => {
    const v: ClusterSeed = {
      ...view(
        [
          block('10.0.0.64/26', 'b'),
          block('10.99.0.0/26', 'b'), // in no pool: the nodes' own network in the fresh-user test
          block('10.0.1.0/26', 'a'), // in no pool either (a own block: no blackhole)
          block('10.0.2.0/26', 'c', {}, 'p-1'), // in its pool, but node c's address is in it
        ],
        [node('a', '192.0.2.11'), node('b', '192.0.2.12'), node('c', '10.0.2.5')],
      ),
      pools: pools('10.0.0.0/24', '10.0.2.0/24'),
    };
    const plan = planRoutes(routeView(v, 'a'), { nodeName: 'a' });
    assert.equal(plan.ready, true);
    if (!plan.ready) return;
    assert.deepEqual(
      plan.routes.map((r) => r.dst),
      ['10.0.0.64/26'],
    );
    const verdicts = planIPAMNodes(v.blocks, v.pools, v.nodes);
    assert.deepEqual(
      [
        ...verdicts.ignored.map((i) => `${i.block.spec.cidr} ${i.reason}`),
        ...verdicts.unrouted.map((u) => `${u.block.spec.cidr} ${u.reason} ${u.node}`),
      ].sort(),
      ['10.0.1.0/26 outside-pools', '10.0.2.0/26 covers-node-address c', '10.99.0.0/26 outside-pools'],
    );
    // c's own block holds c's address: no blackhole there either, skipped with the reason
    const onC = planRoutes(routeView(v, 'c'), { nodeName: 'c' });
    assert.ok(onC.ready);
    assert.deepEqual(
      onC.skipped.map((s) => `${s.dst} ${s.why}`),
      ['10.0.2.0/26 covers-node-address'],
    );
    assert.deepEqual(
      onC.routes.map((r) => r.dst),
      ['10.0.0.64/26'],
    );
    const none = planRoutes(routeView({ ...v, pools: [] }, 'a'), { nodeName: 'a' });
    assert.deepEqual(none.ready ? none.routes : ['not ready'], [], 'no pools: no routes');
  });

  // Issue 23 (D1): objects a node credential could create that would route another node's
  // pods to their author. Seen from a third node (a) and from the victim (b).
  const created = (b: IPAMBlock, at: string): IPAMBlock => ({
    ...b,
    metadata: { ...b.metadata, creationTimestamp: at },
  });
  const labelled = (b: IPAMBlock, labels: Record<string, string>): IPAMBlock => ({
    ...b,
    metadata: { ...b.metadata, labels },
  });
  const victim = created(block('10.0.0.192/26', 'b', { 6: 'b' }), '2026-12-01T00:00:00Z');
  const attacks: { name: string; hostile: IPAMBlock; extraPools?: string[]; why: string }[] = [
    {
      // an unowned /28 inside b's /26 holding b's pod's address for c
      name: "unowned /28 inside another node's /26, allocation for the author",
      hostile: block('10.0.0.192/28', null, { 6: 'c' }),
      why: 'size-mismatch',
    },
    {
      // a /27 affine to the author over b's pods
      name: '/27 affine to the author',
      hostile: block('10.0.0.192/27', 'c'),
      why: 'size-mismatch',
    },
    {
      // a /28 of a later, overlapping /28-block pool: of the right size alone, but younger
      name: '/28 of an overlapping pool',
      hostile: created(block('10.0.0.192/28', null, { 6: 'c' }, 'p-2'), '2026-12-02T00:00:00Z'),
      extraPools: ['10.0.0.192/27'],
      why: 'overlap',
    },
    {
      // labels claiming b's affinity on c's block
      name: 'labels forged to another node',
      hostile: labelled(block('10.0.1.0/26', 'c'), block('10.0.1.0/26', 'b').metadata.labels ?? {}),
      why: 'labels-mismatch',
    },
  ];
  for (const attack of attacks)
    void it(`ignores a hostile block: ${attack.name}`, () => {
      const v: ClusterSeed = {
        ...view([victim, attack.hostile], threeNodes),
        pools: [
          ...pools('10.0.0.0/16', 'fd00::/48'),
          ...(attack.extraPools ?? []).map((cidr) => ({
            metadata: { name: 'p-2', creationTimestamp: '2026-11-20T00:00:00Z' },
            spec: { cidr, blockSize: 28 },
          })),
        ],
      };
      for (const me of ['a', 'b']) {
        const plan = planRoutes(routeView(v, me), { nodeName: me });
        assert.ok(plan.ready);
        // no route from the hostile block (neither its CIDR nor a /32 for its author): b's block
        // routed as before, and nothing else
        assert.deepEqual(
          plan.routes.map((r) => `${r.type} ${r.dst} ${r.node ?? ''}`),
          [me === 'b' ? 'blackhole 10.0.0.192/26 ' : 'unicast 10.0.0.192/26 b'],
          `no route of the hostile block on ${me}`,
        );
      }
      // the controller's verdict names it (Trusted=False, Event, gauge)
      assert.deepEqual(
        planIPAMNodes(v.blocks, v.pools, v.nodes)
          .ignored.filter((i) => i.block === attack.hostile)
          .map((i) => i.reason),
        [attack.why],
      );
    });
});
