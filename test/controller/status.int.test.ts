// IPPool status and unowned empty blocks on the real API server: every `kubectl get ippools`
// column filled (BLOCK SIZE for a pool applied without blockSize), the Allocatable condition
// for an overlapping / disabled pool with an Event, no write when nothing changed, the usage
// metrics, and unowned empty blocks released only after emptyBlockReleaseSeconds.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { IPAM_CONFIG_NAME, newBlock, parseCidr } from 'blockipam/core';
import type { IPPool } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { kubeEventSink } from '../../block-controller/controller/events.ts';
import { controllerMetrics } from '../../block-controller/controller/metrics.ts';
import { Reconciler } from '../../block-controller/controller/reconciler.ts';
import { kubectl } from '../helpers/control-plane.ts';
import {
  blockObject,
  cleanClusterHooks,
  createPod,
  listedView,
  memoryLog,
  poolObject,
  TestClock,
  uniqueNamespace,
} from './helpers.ts';

const ns = uniqueNamespace('ctl-status');
let ds: KubeDatastore;
cleanClusterHooks({ namespace: ns, nodes: ['ctl-n1'], onReady: (d) => (ds = d) });

interface EventObject {
  reason: string;
  type: string;
  note: string;
  regarding: { kind: string; name: string };
  reportingController: string;
  reportingInstance: string;
}

async function events(name: string): Promise<EventObject[]> {
  const list = await ds.transport.request<{ items: EventObject[] }>(
    'GET',
    '/apis/events.k8s.io/v1/namespaces/default/events',
  );
  return list.items.filter(
    (e) =>
      e.regarding.name === name &&
      e.reportingController === 'ipam.blockipam.io/controller' &&
      e.reportingInstance === ns,
  );
}

describe('controller: IPPool status', () => {
  test('usage, effective block size and conditions; kubectl get ippools shows every column', async () => {
    const older = await ds.pools.create(poolObject('ctl-nosize', '10.71.0.0/16'));
    await new Promise((resolve) => setTimeout(resolve, 1100)); // a later creationTimestamp (seconds)
    await ds.pools.create(poolObject('ctl-overlap', '10.71.128.0/17', 24));
    await ds.pools.create({
      ...poolObject('ctl-off', 'fd00:71::/48'),
      spec: { cidr: 'fd00:71::/48', disabled: true },
    });
    await ds.reservations.create({
      metadata: { name: 'ctl-r' },
      spec: { reservedCIDRs: ['10.71.0.0/24', '10.71.0.128/25'] },
    });
    await ds.blocks.create(
      blockObject({
        cidr: '10.71.1.0/26',
        pool: 'ctl-nosize',
        affinity: 'ctl-n1',
        allocations: [2, 3].map((ordinal) => ({ ordinal, handle: `net.s${ordinal}.eth0`, node: 'ctl-n1' })),
      }),
    );
    const registry = new Registry();
    const metrics = controllerMetrics(registry);
    const clock = new TestClock();
    const r = new Reconciler({
      ds,
      view: await listedView(ds),
      log: memoryLog(),
      clock: clock.now,
      metrics,
      events: kubeEventSink(ds.transport, { namespace: 'default', instance: ns }),
    });
    const pass = await r.pass();
    assert.deepEqual(pass.status?.written.sort(), ['ctl-nosize', 'ctl-off', 'ctl-overlap']);
    const nosize = (await ds.pools.get('ctl-nosize')) as IPPool;
    const { conditions, ...counts } = nosize.status ?? {};
    // /16 in /26 blocks: 1,024 blocks × 61 assignable; reserved: one /24 (the /25 inside it).
    assert.deepEqual(counts, {
      observedGeneration: older.metadata.generation,
      blockSize: 26,
      capacity: 62464,
      allocated: 2,
      free: 62464 - 2 - 256,
      reserved: 256,
      blocks: 1,
    });
    assert.deepEqual(
      conditions?.map((c) => [c.type, c.status, c.reason]),
      [['Allocatable', 'True', 'OK']],
    );
    const overlap = (await ds.pools.get('ctl-overlap')) as IPPool;
    assert.deepEqual(
      overlap.status?.conditions?.map((c) => [c.status, c.reason]),
      [['False', 'CIDROverlap']],
    );
    assert.match(overlap.status?.conditions?.[0]?.message ?? '', /older IP pool "ctl-nosize"/);
    assert.equal((await ds.pools.get('ctl-off'))?.status?.conditions?.[0]?.reason, 'PoolDisabled');

    const table = kubectl(['get', 'ippools', 'ctl-nosize', '--no-headers', '-o', 'wide']);
    assert.equal(table.status, 0, table.stderr);
    // NAME CIDR BLOCK-SIZE USED FREE BLOCKS RESERVED ALLOCATABLE MODE DISABLED AGE
    const cols = table.stdout.trim().split(/\s+/);
    assert.deepEqual(cols.slice(0, 10), [
      'ctl-nosize',
      '10.71.0.0/16',
      '26',
      '2',
      '62206',
      '1',
      '256',
      'True',
      'Automatic',
      'false',
    ]);

    assert.deepEqual(
      (await events('ctl-overlap')).map((e) => [e.type, e.reason]),
      [['Warning', 'CIDROverlap']],
    );
    const inUse = await registry.getSingleMetricAsString('blockipam_ipam_allocations_in_use');
    assert.match(inUse, /blockipam_ipam_allocations_in_use\{ippool="ctl-nosize",node="ctl-n1"\} 2/);
    assert.match(
      await registry.getSingleMetricAsString('blockipam_ipam_ippool_size'),
      /ippool="ctl-nosize"\} 62464/,
    );

    // Nothing changed: nothing written.
    const again = await r.pass({ view: await listedView(ds) });
    assert.deepEqual(again.status?.written, []);
  });
});

describe('controller: unowned empty blocks', () => {
  test('released after emptyBlockReleaseSeconds, never an owned or a non-empty one', async () => {
    await ds.configs.create({
      metadata: { name: IPAM_CONFIG_NAME },
      spec: { emptyBlockReleaseSeconds: 120 },
    });
    await ds.pools.create(poolObject('ctl-p', '10.72.0.0/16'));
    const clock = new TestClock();
    const cidr = (text: string) => parseCidr(text) ?? assert.fail(text);
    const fresh = newBlock({ cidr: cidr('10.72.0.0/26'), pool: 'ctl-p', node: null, nowMs: clock.nowMs });
    await ds.blocks.create(fresh);
    await ds.blocks.create(blockObject({ cidr: '10.72.0.64/26', pool: 'ctl-p', affinity: null })); // empty since 1970
    await ds.blocks.create(blockObject({ cidr: '10.72.0.128/26', pool: 'ctl-p', affinity: 'ctl-n1' })); // owned
    const pod = await createPod(ds, { namespace: ns, name: 'user', node: 'ctl-n1', ip: '10.72.0.194' });
    await ds.blocks.create(
      blockObject({
        cidr: '10.72.0.192/26',
        pool: 'ctl-p',
        affinity: null,
        allocations: [
          {
            ordinal: 2,
            handle: 'net.user.eth0',
            node: 'ctl-n1',
            namespace: ns,
            pod: 'user',
            podUID: pod.metadata.uid,
          },
        ],
      }),
    );
    const r = new Reconciler({ ds, view: await listedView(ds), log: memoryLog(), clock: clock.now });
    let pass = await r.pass();
    assert.deepEqual(pass.unownedBlocks, ['10-72-0-64-26']);
    clock.advance(119);
    pass = await r.pass({ view: await listedView(ds) });
    assert.deepEqual(pass.unownedBlocks, []);
    clock.advance(1);
    pass = await r.pass({ view: await listedView(ds) });
    assert.deepEqual(pass.unownedBlocks, ['10-72-0-0-26']);
    assert.deepEqual((await ds.blocks.list()).map((b) => b.metadata.name).sort(), [
      '10-72-0-128-26',
      '10-72-0-192-26',
    ]);
  });

  test('a block written after the watch saw it (an allocation raced in) is not deleted', async () => {
    await ds.pools.create(poolObject('ctl-p', '10.72.0.0/16'));
    await ds.blocks.create(blockObject({ cidr: '10.72.0.64/26', pool: 'ctl-p', affinity: null }));
    const stale = await listedView(ds);
    const block = await ds.blocks.get('10-72-0-64-26');
    await ds.blocks.update({ ...block!, spec: { ...block!.spec, affinity: 'ctl-n1' } }); // claimed meanwhile
    const pass = await new Reconciler({ ds, view: stale, log: memoryLog(), clock: Date.now }).pass();
    assert.deepEqual(pass.unownedBlocks, []);
    assert.equal((await ds.blocks.get('10-72-0-64-26'))?.spec.affinity, 'ctl-n1');
  });
});
