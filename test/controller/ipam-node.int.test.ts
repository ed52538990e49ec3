// The controller's IPAMNode step on the real API server: one IPAMNode per Node, owned by it,
// listing its InternalIPs, its trusted blocks and its borrowed addresses; rewritten on a claim,
// a release, a borrow and an address change — never on an allocation in an own block — deleted
// with its Node; a forged block and a block holding a node address listed nowhere.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import type { Allocation, IPAMNode } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { kubeEventSink } from '../../block-controller/controller/events.ts';
import { controllerMetrics } from '../../block-controller/controller/metrics.ts';
import { Reconciler } from '../../block-controller/controller/reconciler.ts';
import { kubectl } from '../helpers/control-plane.ts';
import {
  blockObject,
  cleanClusterHooks,
  listedView,
  memoryLog,
  poolObject,
  uniqueNamespace,
} from './helpers.ts';

const ns = uniqueNamespace('ctl-ipn');
const [N1, N2] = ['ctl-ipn-1', 'ctl-ipn-2'] as const;
let ds: KubeDatastore;
cleanClusterHooks({ namespace: ns, nodes: [N1, N2], onReady: (d) => (ds = d) });

/** Sets the Node's status.addresses (InternalIPs given, and a Hostname). */
function setAddresses(node: string, ...internal: string[]): void {
  const addresses = [
    ...internal.map((address) => ({ type: 'InternalIP', address })),
    { type: 'Hostname', address: node },
  ];
  const r = kubectl([
    'patch',
    'node',
    node,
    '--subresource=status',
    '--type=merge',
    '-p',
    JSON.stringify({ status: { addresses } }),
  ]);
  assert.equal(r.status, 0, r.stderr);
}

/** [addresses, blocks, borrowed] of the node's IPAMNode, or undefined. */
async function routesOf(node: string): Promise<[string[], string[], string[]] | undefined> {
  const got = await ds.ipamNodes.get(node);
  return got && [got.spec.addresses, got.spec.blocks, got.spec.borrowed];
}

describe('controller: IPAMNode per Node', () => {
  test('created, rewritten only on claim, release, borrow and address change, deleted with its Node', async () => {
    setAddresses(N1, '192.0.2.31', '2001:db8::31');
    setAddresses(N2, '192.0.2.32');
    await ds.pools.create(poolObject('ctl-ipn', '10.74.0.0/16'));
    await ds.blocks.create(
      blockObject({
        cidr: '10.74.0.0/26',
        pool: 'ctl-ipn',
        affinity: N1,
        allocations: [{ ordinal: 5, handle: 'net.a.eth0', node: N1 }],
      }),
    );
    await ds.blocks.create(blockObject({ cidr: '10.74.0.64/26', pool: 'ctl-ipn', affinity: N2 }));
    // forged by N2's credential: an unowned /28 inside N1's /26 holding an address for N2
    await ds.blocks.create(
      blockObject({
        cidr: '10.74.0.0/28',
        pool: 'ctl-ipn',
        affinity: null,
        allocations: [{ ordinal: 6, handle: 'net.h.eth0', node: N2 }],
      }),
    );
    const registry = new Registry();
    const r = new Reconciler({
      ds,
      ipamNodes: ds.ipamNodes,
      view: await listedView(ds),
      log: memoryLog(),
      metrics: controllerMetrics(registry),
      events: kubeEventSink(ds.transport, { namespace: 'default', instance: ns }),
    });
    const pass = async (): Promise<NonNullable<Awaited<ReturnType<Reconciler['pass']>>['ipamNodes']>> => {
      const done = await r.pass({ view: await listedView(ds) });
      assert.ok(done.ipamNodes, `pass ran: ${done.skipped ?? ''}`);
      return done.ipamNodes;
    };

    const first = await pass();
    assert.ok(first.created.includes(N1) && first.created.includes(N2));
    assert.deepEqual(await routesOf(N1), [['192.0.2.31', '2001:db8::31'], ['10.74.0.0/26'], []]);
    assert.deepEqual(
      await routesOf(N2),
      [['192.0.2.32'], ['10.74.0.64/26'], []],
      'the forged /28 gives N2 nothing',
    );
    const n1 = (await ds.ipamNodes.get(N1)) as IPAMNode;
    const nodeUID = kubectl(['get', 'node', N1, '-o', 'jsonpath={.metadata.uid}']).stdout;
    assert.deepEqual(n1.metadata.ownerReferences, [
      { apiVersion: 'v1', kind: 'Node', name: N1, uid: nodeUID },
    ]);
    assert.match(n1.spec.updatedAt ?? '', /^\d{4}-\d\d-\d\dT/);
    assert.deepEqual(await pass(), { created: [], updated: [], deleted: [], unrouted: [] }, 'idempotent');

    // an ordinary allocation in an own block: no IPAMNode write
    const own = await ds.blocks.get('10-74-0-0-26');
    assert.ok(own);
    const a = own.spec.allocations['5'] as Allocation;
    own.spec.allocations['9'] = { ...a, handle: 'net.b.eth0', sequence: 99 };
    await ds.blocks.update(own);
    assert.deepEqual(await pass(), { created: [], updated: [], deleted: [], unrouted: [] });
    assert.equal((await ds.ipamNodes.get(N1))?.metadata.resourceVersion, n1.metadata.resourceVersion);

    // a borrow: N1's pod in N2's block
    await ds.blocks.delete('10-74-0-64-26');
    await ds.blocks.create(
      blockObject({
        cidr: '10.74.0.64/26',
        pool: 'ctl-ipn',
        affinity: N2,
        allocations: [{ ordinal: 7, handle: 'net.c.eth0', node: N1 }],
      }),
    );
    assert.deepEqual((await pass()).updated, [N1]);
    assert.deepEqual((await routesOf(N1))?.[2], ['10.74.0.71/32']);

    // a claim and a release by N2
    await ds.blocks.create(blockObject({ cidr: '10.74.1.0/26', pool: 'ctl-ipn', affinity: N2 }));
    assert.deepEqual((await pass()).updated, [N2]);
    assert.deepEqual((await routesOf(N2))?.[1], ['10.74.0.64/26', '10.74.1.0/26']);
    await ds.blocks.delete('10-74-1-0-26');
    assert.deepEqual((await pass()).updated, [N2]);
    assert.deepEqual((await routesOf(N2))?.[1], ['10.74.0.64/26']);

    // an address change
    setAddresses(N2, '192.0.2.42');
    assert.deepEqual((await pass()).updated, [N2]);
    assert.deepEqual((await routesOf(N2))?.[0], ['192.0.2.42']);

    // a claimed block holding a node's address: listed nowhere, reported once
    setAddresses(N2, '10.74.2.9');
    await ds.blocks.create(blockObject({ cidr: '10.74.2.0/26', pool: 'ctl-ipn', affinity: N1 }));
    const covered = await pass();
    assert.deepEqual(covered.unrouted, ['10-74-2-0-26']);
    assert.deepEqual((await routesOf(N1))?.[1], ['10.74.0.0/26']);
    assert.match(
      await registry.getSingleMetricAsString('blockipam_ipam_blocks_unrouted'),
      /reason="covers-node-address"} 1/,
    );

    // the Node goes (the test control plane runs no garbage collector: the controller deletes it)
    await ds.transport.request('DELETE', `/api/v1/nodes/${N2}`);
    assert.deepEqual((await pass()).deleted, [N2]);
    assert.equal(await ds.ipamNodes.get(N2), undefined);
    assert.match(await registry.getSingleMetricAsString('blockipam_ipamnode_writes_total'), /op="delete"} 1/);
  });

  test('kubectl shows IPAMNodes (short name ipn, category blockipam) with their addresses and blocks', async () => {
    setAddresses(N1, '192.0.2.31');
    await ds.pools.create(poolObject('ctl-ipn', '10.74.0.0/16'));
    await ds.blocks.create(blockObject({ cidr: '10.74.0.0/26', pool: 'ctl-ipn', affinity: N1 }));
    const r = new Reconciler({ ds, ipamNodes: ds.ipamNodes, view: await listedView(ds), log: memoryLog() });
    await r.pass();
    const out = kubectl(['get', 'ipn', N1, '--no-headers']).stdout;
    assert.match(out, new RegExp(`^${N1}\\s+\\["192.0.2.31"\\]\\s+\\["10.74.0.0/26"\\]`));
    assert.match(kubectl(['get', 'blockipam']).stdout, new RegExp(`ipamnode.ipam.blockipam.io/${N1}`));
  });
});
