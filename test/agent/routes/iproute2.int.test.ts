// The reconciler on a real kernel route table, inside a node namespace this test creates (root):
// it installs and removes only routes of its own protocol, leaves every other route alone
// (even one for a destination it wants) but takes over one equal to its own, is idempotent, repairs a route deleted by hand,
// changes nothing before the view synced, and handles IPv6.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  IpRouteTable,
  reconcileRoutes,
  RouteProgrammer,
  type PassOutcome,
  type RouteView,
} from '../../../block-controller/agent/routes/index.ts';
import { createTopology, sh, type Topology } from '../../e2e/harness/netns.ts';
import { block, node, pools, routeView, type ClusterSeed } from './fixtures.ts';

void describe('reconcileRoutes in a network namespace', () => {
  let topo: Topology;
  let ns: string;
  let table: IpRouteTable;
  const ip = (...args: string[]): string => sh('ip', ['-n', ns, ...args]);
  /** Every route of the main table that is not ours, both families, as text. */
  const foreign = (): string =>
    [ip('route', 'show', 'table', 'main'), ip('-6', 'route', 'show', 'table', 'main')]
      .join('')
      .split('\n')
      .filter((l) => l !== '' && !l.includes('proto 210'))
      .sort()
      .join('\n');
  /** Our routes (`show proto 210` prints them without the proto), without dev/metric/pref. */
  const ours = (): string[] =>
    [ip('route', 'show', 'proto', '210'), ip('-6', 'route', 'show', 'proto', '210')]
      .join('')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => l.replace(/ dev \S+| metric \d+| pref \S+/g, '').trim())
      .sort();
  const nodes = [
    node('n1', '192.0.2.11', '2001:db8::11'),
    node('n2', '192.0.2.12', '2001:db8::12'),
    node('n3', '192.0.2.13'),
  ];
  const view = (over: Partial<ClusterSeed> = {}): RouteView =>
    routeView(
      {
        blocks: [
          block('10.20.0.0/26', 'n1'),
          block('10.20.0.64/26', 'n2', { 2: 'n2', 5: 'n3' }),
          block('fd20::40/122', 'n2'),
        ],
        nodes,
        pools: pools('10.0.0.0/8', 'fd20::/48'),
        ...over,
      },
      'n1',
    );
  const pass = (v: RouteView): Promise<PassOutcome> => reconcileRoutes(v, { nodeName: 'n1', table });
  const done = async (v: RouteView): Promise<Extract<PassOutcome, { status: 'done' }>> => {
    const o = await pass(v);
    assert.equal(o.status, 'done');
    return o;
  };
  let before0: string;

  before(() => {
    topo = createTopology(1, 'rt');
    ns = topo.nodes[0] as string;
    table = new IpRouteTable({ command: ['ip', '-n', ns] });
    ip('-6', 'addr', 'add', '2001:db8::11/64', 'dev', 'eth0', 'nodad');
    // other protocols' routes, which must survive every pass
    ip('route', 'add', '10.99.0.0/26', 'via', '192.0.2.12');
    ip('route', 'add', '10.98.0.0/26', 'via', '192.0.2.13', 'proto', 'static');
    ip('route', 'add', '10.97.0.0/26', 'via', '192.0.2.13', 'proto', '211');
    ip('-6', 'route', 'add', 'fd99::/64', 'via', '2001:db8::13');
    before0 = foreign();
  });
  after(() => topo?.destroy());

  void it('installs the planned routes with protocol 210, both families', async () => {
    const o = await done(view());
    assert.equal(o.added, 4);
    assert.deepEqual(ours(), [
      '10.20.0.64/26 via 192.0.2.12',
      '10.20.0.69 via 192.0.2.13',
      'blackhole 10.20.0.0/26',
      'fd20::40/122 via 2001:db8::12',
    ]);
    assert.equal(foreign(), before0, 'no other route changed');
  });

  void it('a second pass changes nothing (idempotent)', async () => {
    const o = await done(view());
    assert.deepEqual([o.added, o.replaced, o.removed, o.unchanged], [0, 0, 0, 4]);
  });

  void it('before the view synced nothing is read or changed, even if every route would go', async () => {
    const o = await pass({ ...view(), synced: false, ipamNodes: [], blocks: [] });
    assert.deepEqual(o, { status: 'waiting', why: 'not-synced' });
    assert.equal(ours().length, 4);
  });

  void it('follows changes: next hop replaced, stale routes removed, others untouched', async () => {
    const moved = [node('n1', '192.0.2.11'), node('n2', '192.0.2.22'), node('n3', '192.0.2.13')];
    const o = await done(
      view({ nodes: moved, blocks: [block('10.20.0.0/26', 'n1'), block('10.20.0.64/26', 'n2')] }),
    );
    assert.deepEqual([o.added, o.replaced, o.removed], [0, 1, 2]);
    assert.deepEqual(ours(), ['10.20.0.64/26 via 192.0.2.22', 'blackhole 10.20.0.0/26']);
    assert.equal(foreign(), before0);
  });

  void it("never overwrites another protocol's route for a destination it wants; reports it", async () => {
    const o = await done(view({ blocks: [block('10.20.0.0/26', 'n1'), block('10.99.0.0/26', 'n3')] }));
    assert.equal(o.failed.length, 1);
    assert.equal(o.failed[0]?.change.route.dst, '10.99.0.0/26');
    assert.match(o.failed[0]?.error ?? '', /exists/i);
    assert.equal(foreign(), before0, 'the foreign 10.99.0.0/26 via 192.0.2.12 is intact');
    assert.deepEqual(ours(), ['blackhole 10.20.0.0/26']);
  });

  void it('the loop repairs a route deleted by hand on its next pass', async () => {
    const outcomes: string[] = [];
    const loop = new RouteProgrammer({ nodeName: 'n1', table, onPass: (o) => outcomes.push(o.status) });
    try {
      await loop.flush();
      assert.deepEqual(outcomes, ['waiting'], 'no view yet: waiting, nothing touched');
      assert.deepEqual(ours(), ['blackhole 10.20.0.0/26']);
      loop.update(view());
      await loop.flush();
      assert.equal(ours().length, 4);
      ip('route', 'del', '10.20.0.64/26', 'proto', '210');
      await loop.flush();
      assert.deepEqual(loop.last && loop.last.status === 'done' ? loop.last.added : -1, 1);
      assert.equal(ours().length, 4);
    } finally {
      await loop.stop();
    }
  });

  void it('a synced empty cluster removes all of ours and nothing else', async (t) => {
    // The measurement: 1,000 remote blocks (and the removal) in one pass each.
    const many = Array.from({ length: 1000 }, (_, i) =>
      block(`10.${30 + (i >> 8)}.${i & 255}.0/26`, i % 2 === 0 ? 'n2' : 'n3'),
    );
    let t0 = performance.now();
    const big = await done(view({ blocks: many }));
    const addMs = performance.now() - t0;
    t0 = performance.now();
    const again = await done(view({ blocks: many }));
    const idleMs = performance.now() - t0;
    assert.equal(big.failed.length, 0);
    assert.equal(again.unchanged, 1000);
    t0 = performance.now();
    const o = await done(view({ blocks: [], nodes: [node('n1', '192.0.2.11')] }));
    const delMs = performance.now() - t0;
    t.diagnostic(
      `1000 block routes: install pass ${addMs.toFixed(0)} ms, unchanged pass ${idleMs.toFixed(0)} ms, removal pass ${delMs.toFixed(0)} ms`,
    );
    assert.ok(o.removed >= 1000);
    assert.deepEqual(ours(), []);
    assert.equal(foreign(), before0);
  });

  void it('takes over an equal route of another protocol in one replace; a different one stays', async () => {
    // kindnetd's route to a block of node n3 (its podCIDR when a host-local cluster is adopted)
    ip('route', 'add', '10.96.0.0/26', 'via', '192.0.2.13', 'proto', 'boot');
    const seeded = foreign();
    const o = await done(
      view({
        blocks: [block('10.20.0.0/26', 'n1'), block('10.96.0.0/26', 'n3'), block('10.99.0.0/26', 'n3')],
      }),
    );
    assert.deepEqual([o.replaced, o.failed.map((f) => f.change.route.dst)], [1, ['10.99.0.0/26']]);
    assert.ok(ours().includes('10.96.0.0/26 via 192.0.2.13'), 'the equal route is ours now');
    assert.ok(!foreign().includes('10.96.0.0/26'), 'and no longer the other protocol’s');
    assert.equal(foreign(), seeded.replace(/^10\.96\.0\.0\/26 .*\n?/m, ''), 'nothing else changed');
    await done(view({ blocks: [], nodes: [node('n1', '192.0.2.11')] }));
  });
});
