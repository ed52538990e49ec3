// IPPool status and unowned empty blocks on the real API server: every `kubectl get ippools`
// column filled (BLOCK SIZE for a pool applied without blockSize), the conditions and state
// for an overlapping / disabled pool with an Event, no write when nothing changed, the usage
// metrics; a full pool seen by `kubectl wait --for=condition=Exhausted` through the real CRD
// with its Events; and unowned empty blocks released only after emptyBlockReleaseSeconds.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { forecastExhaustion, IPAM_CONFIG_NAME, newBlock, parseCidr, rfc3339 } from 'blockipam/core';
import type { IPPool } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { kubeEventSink } from '../../block-controller/controller/events.ts';
import { controllerMetrics } from '../../block-controller/controller/metrics.ts';
import { Reconciler } from '../../block-controller/controller/reconciler.ts';
import { controlPlane, kubectl } from '../helpers/control-plane.ts';
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

/** kubectl in the background: resolves when it exits (a `kubectl wait` blocks on a watch). */
function kubectlAsync(args: readonly string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  const cp = controlPlane();
  const child = spawn(join(cp.bin, 'kubectl'), ['--kubeconfig', cp.adminKubeconfig, ...args]);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) =>
    child.on('close', (code) => resolve({ status: code ?? -1, stdout, stderr })),
  );
}

describe('controller: IPPool status', () => {
  test('usage, effective block size and conditions; kubectl get ippools shows every column', async () => {
    const older = await ds.pools.create(poolObject('ctl-nosize', '10.71.0.0/16'));
    // the next pool gets a later creationTimestamp (whole seconds): wait for the clock to reach it
    const next = Date.parse(older.metadata.creationTimestamp ?? '') + 1000;
    while (Date.now() < next) await new Promise((resolve) => setTimeout(resolve, 20));
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
      state: 'Ready',
      // 1,024 ranges less the reserved /24's four and the claimed one
      unclaimedBlocks: 1019,
      freeInClaimedBlocks: 59,
      freeInUnclaimedBlocks: 62206 - 59,
      borrowed: 0,
      shortNodes: [],
      shortNodeCount: 0,
      // the first sample of the allocated count, at the pass (forecasts: core's nextSamples)
      allocationSamples: [{ time: rfc3339(clock.nowMs), allocated: 2 }],
    });
    assert.deepEqual(
      conditions?.map((c) => [c.type, c.status, c.reason, c.observedGeneration]),
      [
        ['Ready', 'True', 'OK', older.metadata.generation],
        ['Allocatable', 'True', 'OK', older.metadata.generation],
        ['NearlyExhausted', 'False', 'BelowThreshold', older.metadata.generation],
        ['Exhausted', 'False', 'FreeAddresses', older.metadata.generation],
        ['Disabled', 'False', 'Enabled', older.metadata.generation],
      ],
    );
    const overlap = (await ds.pools.get('ctl-overlap')) as IPPool;
    assert.deepEqual(
      overlap.status?.conditions?.map((c) => [c.type, c.status, c.reason]),
      [
        ['Ready', 'False', 'CIDROverlap'],
        ['Allocatable', 'False', 'CIDROverlap'],
        ['NearlyExhausted', 'False', 'CIDROverlap'],
        ['Exhausted', 'False', 'CIDROverlap'],
        ['Disabled', 'False', 'Enabled'],
      ],
    );
    assert.equal(overlap.status?.state, 'CIDROverlap');
    assert.match(overlap.status?.conditions?.[0]?.message ?? '', /older IP pool "ctl-nosize"/);
    assert.equal((await ds.pools.get('ctl-off'))?.status?.conditions?.[0]?.reason, 'PoolDisabled');

    const table = kubectl(['get', 'ippools', 'ctl-nosize', '--no-headers', '-o', 'wide']);
    assert.equal(table.status, 0, table.stderr);
    // NAME CIDR BLOCK-SIZE USED FREE STATE BLOCKS UNCLAIMED SHORT-NODES RESERVED READY
    // NEARLY-EXHAUSTED EXHAUSTED ALLOCATABLE MODE DISABLED AGE
    const cols = table.stdout.trim().split(/\s+/);
    assert.deepEqual(cols.slice(0, 16), [
      'ctl-nosize',
      '10.71.0.0/16',
      '26',
      '2',
      '62206',
      'Ready',
      '1',
      '1019',
      '0',
      '256',
      'True',
      'False',
      'False',
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

    // Nothing changed: nothing written (within 30 min no sample is due).
    clock.advance(29 * 60);
    const again = await r.pass({ view: await listedView(ds) });
    assert.deepEqual(again.status?.written, []);

    // 30 min after the first sample, two more allocations: a second sample, and a forecast of
    // 4 addresses an hour from the stored status (as ipamctl show makes it).
    await ds.blocks.create(
      blockObject({
        cidr: '10.71.2.0/26',
        pool: 'ctl-nosize',
        affinity: 'ctl-n1',
        allocations: [2, 3].map((ordinal) => ({ ordinal, handle: `net.t${ordinal}.eth0`, node: 'ctl-n1' })),
      }),
    );
    clock.advance(60);
    const later = await r.pass({ view: await listedView(ds) });
    assert.ok(later.status?.written.includes('ctl-nosize'));
    const sampled = (await ds.pools.get('ctl-nosize')) as IPPool;
    assert.deepEqual(sampled.status?.allocationSamples, [
      { time: rfc3339(clock.nowMs - 30 * 60_000), allocated: 2 },
      { time: rfc3339(clock.nowMs), allocated: 4 },
    ]);
    const forecast = forecastExhaustion(sampled.status?.allocationSamples, {
      allocated: sampled.status?.allocated ?? 0,
      free: sampled.status?.free ?? 0,
      nowMs: Date.parse(rfc3339(clock.nowMs)), // the samples' times are whole seconds
    });
    assert.equal(forecast.kind === 'exhausts' ? forecast.ratePerHour : forecast.kind, 4);
  });
});

describe('controller: pool exhaustion through the real CRD', () => {
  test('kubectl wait --for=condition=Exhausted returns once a pass finds the pool full; Events recorded', async () => {
    // one /28 block: 13 assignable addresses
    await ds.pools.create(poolObject('ctl-tiny', '10.73.0.0/28', 28));
    const r = new Reconciler({
      ds,
      view: await listedView(ds),
      log: memoryLog(),
      clock: Date.now,
      events: kubeEventSink(ds.transport, { namespace: 'default', instance: ns }),
    });
    await r.pass();
    const wait = (condition: string, timeout: string) =>
      kubectl(['wait', `--for=condition=${condition}`, 'ippool/ctl-tiny', `--timeout=${timeout}`]);
    assert.equal(wait('Ready', '0s').status, 0, 'Ready before the fill');
    assert.notEqual(wait('Exhausted', '0s').status, 0, 'not exhausted yet');
    const waiting = kubectlAsync(['wait', '--for=condition=Exhausted', 'ippool/ctl-tiny', '--timeout=120s']);
    const allocations = Array.from({ length: 13 }, (_, i) => ({
      ordinal: i + 2,
      handle: `net.tiny${i}.eth0`,
      node: 'ctl-n1',
    }));
    await ds.blocks.create(
      blockObject({ cidr: '10.73.0.0/28', pool: 'ctl-tiny', affinity: 'ctl-n1', allocations }),
    );
    const pass = await r.pass({ view: await listedView(ds) });
    assert.deepEqual(pass.status?.written, ['ctl-tiny']);
    const waited = await waiting;
    assert.equal(waited.status, 0, waited.stderr);
    assert.match(waited.stdout, /ippool.ipam.blockipam.io\/ctl-tiny condition met/);
    assert.equal(wait('Ready=false', '0s').status, 0);
    assert.equal(wait('NearlyExhausted', '0s').status, 0);
    const row = kubectl(['get', 'ippools', 'ctl-tiny', '--no-headers']);
    // NAME CIDR BLOCK-SIZE USED FREE STATE AGE
    assert.deepEqual(row.stdout.trim().split(/\s+/).slice(0, 6), [
      'ctl-tiny',
      '10.73.0.0/28',
      '28',
      '13',
      '0',
      'Exhausted',
    ]);
    assert.deepEqual(
      (await events('ctl-tiny'))
        .filter((e) => e.reason.startsWith('PoolNearly') || e.reason === 'PoolExhausted')
        .map((e) => [e.type, e.reason, e.regarding.kind])
        .sort(),
      [
        ['Warning', 'PoolExhausted', 'IPPool'],
        ['Warning', 'PoolNearlyExhausted', 'IPPool'],
      ],
    );
    // an unchanged pass writes nothing and records no further Event
    assert.deepEqual((await r.pass({ view: await listedView(ds) })).status?.written, []);
    assert.equal((await events('ctl-tiny')).filter((e) => e.reason === 'PoolExhausted').length, 1);
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

describe('controller: Manual pools in the node views', () => {
  test('a full Manual pool a pending pod requests (its namespace’s annotation): the node is short; freed: recovery Events', async () => {
    // one /28 block: 13 assignable addresses, all allocated on ctl-n1
    await ds.pools.create({
      ...poolObject('ctl-manual', '10.74.0.0/28', 28),
      spec: { cidr: '10.74.0.0/28', blockSize: 28, assignmentMode: 'Manual' },
    });
    const allocations = Array.from({ length: 13 }, (_, i) => ({
      ordinal: i + 2,
      handle: `net.manual${i}.eth0`,
      node: 'ctl-n1',
    }));
    await ds.blocks.create(
      blockObject({ cidr: '10.74.0.0/28', pool: 'ctl-manual', affinity: 'ctl-n1', allocations }),
    );
    await ds.transport.request('PATCH', `/api/v1/namespaces/${ns}`, {
      body: { metadata: { annotations: { 'ipam.blockipam.io/ippools': '["ctl-manual"]' } } },
      contentType: 'application/merge-patch+json',
    });
    // bound to ctl-n1, no sandbox yet: phase Pending
    await createPod(ds, { namespace: ns, name: 'waits', node: 'ctl-n1' });
    const registry = new Registry();
    const r = new Reconciler({
      ds,
      view: await listedView(ds),
      log: memoryLog(),
      clock: Date.now,
      metrics: controllerMetrics(registry),
      events: kubeEventSink(ds.transport, { namespace: 'default', instance: ns }),
    });
    await r.pass();
    const pool = await ds.pools.get('ctl-manual');
    assert.deepEqual(pool?.status?.shortNodes, [
      { node: 'ctl-n1', free: 0, blocks: 1, reason: 'NoUnclaimedBlocks' },
    ]);
    assert.equal(pool?.status?.state, 'Exhausted');
    assert.match(
      await registry.getSingleMetricAsString('blockipam_ipam_node_short'),
      /blockipam_ipam_node_short\{ippool="ctl-manual",node="ctl-n1",reason="NoUnclaimedBlocks"\} 1/,
    );
    // the addresses freed (the block released): the pool leaves Exhausted and NearlyExhausted
    await ds.transport.request('DELETE', '/apis/ipam.blockipam.io/v1alpha1/ipamblocks/10-74-0-0-28');
    const freed = await r.pass({ view: await listedView(ds) });
    assert.deepEqual(freed.status?.written, ['ctl-manual']);
    assert.deepEqual((await ds.pools.get('ctl-manual'))?.status?.shortNodes, []);
    assert.deepEqual(
      (await events('ctl-manual'))
        .filter((e) => e.reason.startsWith('PoolNoLonger'))
        .map((e) => [e.type, e.reason, e.regarding.kind])
        .sort(),
      [
        ['Normal', 'PoolNoLongerExhausted', 'IPPool'],
        ['Normal', 'PoolNoLongerNearlyExhausted', 'IPPool'],
      ],
    );
  });
});
