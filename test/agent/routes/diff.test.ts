// The diff (pure) and the iproute2 adapter's text parts: which changes turn our installed
// routes into the desired ones, the batch lines they become, and batch failures parsed back.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  diffRoutes,
  IpRouteTable,
  parseBatchFailures,
} from '../../../block-controller/agent/routes/index.ts';
import type {
  DesiredRoute,
  InstalledRoute,
  RouteChange,
} from '../../../block-controller/agent/routes/index.ts';

const via = (dst: string, gateway: string): DesiredRoute => ({
  dst,
  family: dst.includes(':') ? 6 : 4,
  type: 'unicast',
  gateway,
  reason: 'block',
  block: 'b',
  node: 'n',
});
const hole = (dst: string): DesiredRoute => ({
  dst,
  family: 4,
  type: 'blackhole',
  reason: 'own-block',
  block: 'b',
});
const have = (dst: string, gateway?: string, metric?: number): InstalledRoute => ({
  dst,
  family: dst.includes(':') ? 6 : 4,
  type: gateway ? 'unicast' : 'blackhole',
  ...(gateway ? { gateway } : {}),
  ...(metric === undefined ? {} : { metric }),
});
const ops = (changes: RouteChange[]): string[] =>
  changes.map((c) => `${c.op} ${c.route.dst}${c.route.gateway ? ` ${c.route.gateway}` : ''}`);

void describe('diffRoutes', () => {
  const cases: { name: string; desired: DesiredRoute[]; installed: InstalledRoute[]; want: string[] }[] = [
    {
      // nothing installed yet
      name: 'adds what is missing',
      desired: [via('10.0.0.64/26', '192.0.2.12'), hole('10.0.0.0/26')],
      installed: [],
      want: ['add 10.0.0.0/26', 'add 10.0.0.64/26 192.0.2.12'],
    },
    {
      // the second pass over the same view
      name: 'idempotent: equal routes are left alone (IPv6 at its default metric 1024)',
      desired: [via('10.0.0.64/26', '192.0.2.12'), via('fd00::40/122', '2001:db8::12'), hole('10.0.0.0/26')],
      installed: [
        have('10.0.0.64/26', '192.0.2.12'),
        have('fd00::40/122', '2001:db8::12', 1024),
        have('10.0.0.0/26'),
      ],
      want: [],
    },
    {
      // the owner's InternalIP changed
      name: 'replaces our route when the next hop changed',
      desired: [via('10.0.0.64/26', '192.0.2.99')],
      installed: [have('10.0.0.64/26', '192.0.2.12')],
      want: ['replace 10.0.0.64/26 192.0.2.99'],
    },
    {
      // a block was released or its node deleted
      name: 'deletes stale routes of ours, deletes first',
      desired: [via('10.0.0.128/26', '192.0.2.13')],
      installed: [have('10.0.0.64/26', '192.0.2.12'), have('10.0.0.70/32', '192.0.2.13')],
      want: [
        'delete 10.0.0.64/26 192.0.2.12',
        'delete 10.0.0.70/32 192.0.2.13',
        'add 10.0.0.128/26 192.0.2.13',
      ],
    },
    {
      // someone added one of "ours" at another metric: keep the default-metric one, drop the extra
      name: 'an extra route of ours at another metric goes',
      desired: [via('10.0.0.64/26', '192.0.2.12')],
      installed: [have('10.0.0.64/26', '192.0.2.12', 50), have('10.0.0.64/26', '192.0.2.12')],
      want: ['delete 10.0.0.64/26 192.0.2.12'],
    },
    {
      // only a non-default-metric one of ours: add at the default metric (replace would target
      // another protocol's route at that metric), and remove ours
      name: 'ours only at another metric: add + delete',
      desired: [via('10.0.0.64/26', '192.0.2.12')],
      installed: [have('10.0.0.64/26', '192.0.2.12', 50)],
      want: ['delete 10.0.0.64/26 192.0.2.12', 'add 10.0.0.64/26 192.0.2.12'],
    },
    {
      // the cluster has no blocks any more (a synced view): everything of ours goes
      name: 'empty desired set removes all of ours',
      desired: [],
      installed: [have('10.0.0.64/26', '192.0.2.12'), have('10.0.0.0/26')],
      want: ['delete 10.0.0.0/26', 'delete 10.0.0.64/26 192.0.2.12'],
    },
  ];
  for (const c of cases)
    void it(c.name, () => assert.deepEqual(ops(diffRoutes(c.desired, c.installed)), c.want));
  void it('another protocol’s route equal to ours is taken over by replace; a different one is left to add', () => {
    const others = [have('10.0.0.64/26', '192.0.2.12'), have('10.0.0.128/26', '192.0.2.99')];
    const desired = [via('10.0.0.64/26', '192.0.2.12'), via('10.0.0.128/26', '192.0.2.13')];
    assert.deepEqual(ops(diffRoutes(desired, [], others)), [
      'add 10.0.0.128/26 192.0.2.13',
      'replace 10.0.0.64/26 192.0.2.12',
    ]);
  });
});

void describe('IpRouteTable batch text', () => {
  const table = new IpRouteTable({ protocol: 210 });
  void it('every line carries our protocol; deletes carry the metric when known', () => {
    assert.deepEqual(
      [
        { op: 'add', route: via('10.0.0.64/26', '192.0.2.12') },
        { op: 'replace', route: via('fd00::40/122', '2001:db8::12') },
        { op: 'add', route: hole('10.0.0.0/26') },
        { op: 'delete', route: have('10.0.0.70/32', '192.0.2.13') },
        { op: 'delete', route: have('10.0.0.64/26', '192.0.2.12', 50) },
      ].map((c) => table.lineOf(c as RouteChange)),
      [
        'route add 10.0.0.64/26 via 192.0.2.12 proto 210',
        'route replace fd00::40/122 via 2001:db8::12 proto 210',
        'route add blackhole 10.0.0.0/26 proto 210',
        'route del 10.0.0.70/32 proto 210',
        'route del 10.0.0.64/26 proto 210 metric 50',
      ],
    );
  });
  void it('parses "Command failed -:N" with the error lines before it', () => {
    const stderr =
      'Error: Nexthop has invalid gateway.\nCommand failed -:1\nRTNETLINK answers: File exists\nCommand failed -:4\n';
    assert.deepEqual(
      [...parseBatchFailures(stderr)],
      [
        [1, 'Error: Nexthop has invalid gateway.'],
        [4, 'RTNETLINK answers: File exists'],
      ],
    );
  });
  void it('refuses a protocol id the kernel owns or that does not fit a byte', () => {
    for (const protocol of [0, 2, 4, 256, 1.5])
      assert.throws(() => new IpRouteTable({ protocol }), /protocol/);
  });
});
