// A leader that loses its lease in the middle of a pass sends nothing more (the elector's
// `deposed` signal is bound to every request of the pass), and a restarted controller — a new
// leader, whose grace periods live in memory — never releases a leak early: it only starts the
// grace period again. Real API server, real Lease, in-process elector and reconciler.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { IPAM_CONFIG_NAME } from 'blockipam/core';
import type { Datastore, IPAMBlock } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { LeaderElector } from '../../block-controller/controller/leader/elector.ts';
import { kubeLeaseStore } from '../../block-controller/controller/leader/lease-store.ts';
import { microTime } from '../../block-controller/controller/leader/lease.ts';
import { Reconciler } from '../../block-controller/controller/reconciler.ts';
import {
  blockObject,
  cleanClusterHooks,
  listedView,
  memoryLog,
  poolObject,
  TestClock,
  uniqueNamespace,
} from './helpers.ts';

const ns = uniqueNamespace('ctl-loss');
const GRACE_S = 60;
let ds: KubeDatastore;
cleanClusterHooks({
  namespace: ns,
  nodes: ['ctl-n1'],
  onReady: (d) => (ds = d),
  setup: async (d) => {
    await d.pools.create(poolObject('ctl-loss-p', '10.74.0.0/16'));
    await d.configs.create({
      metadata: { name: IPAM_CONFIG_NAME },
      spec: { leakGracePeriodSeconds: GRACE_S },
    });
  },
});

/** A block on ctl-n1 holding one allocation whose pod never existed (a `pod-gone` leak). */
async function seedLeak(): Promise<void> {
  await ds.blocks.create(
    blockObject({
      cidr: '10.74.0.0/26',
      pool: 'ctl-loss-p',
      affinity: 'ctl-n1',
      allocations: [
        { ordinal: 2, handle: 'net.lost.eth0', node: 'ctl-n1', namespace: ns, pod: 'lost', podUID: 'uid-l' },
      ],
    }),
  );
}

const heldHandles = async (): Promise<string[]> =>
  Object.values(((await ds.blocks.get('10-74-0-0-26')) as IPAMBlock).spec.allocations).map((a) => a.handle);

/**
 * `ds` with every call recorded (name, and whether it was made after `lostAt()`), the
 * re-check's pod GET held at `gate` until the test opens it.
 */
function recording(gate: Promise<void>, lostAt: () => number | undefined) {
  const calls: { call: string; afterLoss: boolean; ok?: boolean }[] = [];
  const wrap = <F extends (...args: never[]) => Promise<unknown>>(call: string, f: F, hold = false): F =>
    (async (...args: never[]) => {
      if (hold) await gate;
      const entry = { call, afterLoss: lostAt() !== undefined };
      calls.push(entry);
      const result = await f(...args);
      Object.assign(entry, { ok: true });
      return result;
    }) as F;
  const blocks = ds.blocks;
  const view: Datastore = {
    ...ds,
    pools: ds.pools,
    configs: ds.configs,
    reservations: ds.reservations,
    blocks: {
      get: wrap('blocks.get', blocks.get.bind(blocks)),
      list: wrap('blocks.list', blocks.list.bind(blocks)),
      listMetadata: wrap('blocks.listMetadata', blocks.listMetadata.bind(blocks)),
      listPage: wrap('blocks.listPage', blocks.listPage.bind(blocks)),
      create: wrap('blocks.create', blocks.create.bind(blocks)),
      update: wrap('blocks.update', blocks.update.bind(blocks)),
      delete: wrap('blocks.delete', blocks.delete.bind(blocks)),
    },
    getPod: wrap('getPod', ds.getPod.bind(ds), true),
    getNode: wrap('getNode', ds.getNode.bind(ds)),
    getNamespace: wrap('getNamespace', ds.getNamespace.bind(ds)),
    listPods: wrap('listPods', ds.listPods.bind(ds)),
    listNodes: wrap('listNodes', ds.listNodes.bind(ds)),
    listPodPage: wrap('listPodPage', ds.listPodPage.bind(ds)),
    listNodePage: wrap('listNodePage', ds.listNodePage.bind(ds)),
  };
  return { view, calls };
}

describe('controller: leadership lost', () => {
  test('lost in the middle of a pass: no request after the loss, the leak stays', async () => {
    await seedLeak();
    const lease = kubeLeaseStore(ds.transport, 'default', `blockipam-controller-${ns}`);
    const periods = { leaseDurationMs: 3_000, renewDeadlineMs: 1_500, retryPeriodMs: 300 };
    const elector = new LeaderElector({ store: lease, identity: 'victim', ...periods });
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let lostAtMs: number | undefined;
    const rec = recording(gate, () => lostAtMs);
    const clock = new TestClock();
    const r = new Reconciler({
      ds: rec.view,
      view: { notReady: () => 'unused' } as never,
      log: memoryLog(),
      clock: clock.now,
    });
    await r.pass({ view: await listedView(ds) }); // sees the leak: a candidate from now on
    assert.equal(r.candidates.size, 1);
    clock.advance(GRACE_S);
    const stop = new AbortController();
    let outcome: Awaited<ReturnType<Reconciler['pass']>> | undefined;
    let passError: unknown;
    const ran = elector.run(stop.signal, async (leading, deposed) => {
      deposed.addEventListener('abort', () => (lostAtMs = Date.now()), { once: true });
      const view = await listedView(ds);
      const pass = r.pass({ view, signal: deposed, mayWrite: () => elector.isLeader && !leading.aborted });
      // The pass now waits in the re-check's pod GET. Another replica takes the lease (as after
      // a partition): every renewal of ours fails from here on.
      const current = await lease.get();
      assert.equal(current?.spec?.holderIdentity, 'victim');
      await lease.update(current?.metadata.resourceVersion ?? '', {
        ...current?.spec,
        holderIdentity: 'usurper',
        renewTime: microTime(Date.now() + 60_000),
        leaseDurationSeconds: 60,
      });
      await new Promise((resolve) => deposed.addEventListener('abort', resolve, { once: true }));
      assert.equal(elector.isLeader, false, 'deposed fires when isLeader turns false');
      open();
      try {
        outcome = await pass;
      } catch (error) {
        passError = error;
      }
      stop.abort();
    });
    await ran;
    assert.equal(passError, undefined, 'the pass itself never throws');
    assert.ok(lostAtMs !== undefined, 'leadership was lost');
    assert.deepEqual(
      rec.calls.filter((c) => c.afterLoss && c.ok),
      [],
      `no request answered after the loss: ${JSON.stringify(rec.calls)}`,
    );
    assert.deepEqual(
      rec.calls.filter((c) => c.call !== 'getPod' && c.afterLoss),
      [],
      'no request even started after the loss',
    );
    assert.deepEqual(outcome?.leaks?.reclaim.released, []);
    assert.deepEqual(outcome?.leaks?.reclaim.kept, [{ handle: 'net.lost.eth0', reason: 'api-error' }]);
    assert.deepEqual(await heldHandles(), ['net.lost.eth0']);
    // The lease is the usurper's: the deposed leader did not clear it on its way out.
    assert.equal((await lease.get())?.spec?.holderIdentity, 'usurper');
  });

  test('the same pass while still leading releases the leak (the test sees a real release)', async () => {
    await seedLeak();
    const clock = new TestClock();
    const rec = recording(Promise.resolve(), () => undefined);
    const r = new Reconciler({
      ds: rec.view,
      view: { notReady: () => 'unused' } as never,
      log: memoryLog(),
      clock: clock.now,
    });
    await r.pass({ view: await listedView(ds) });
    clock.advance(GRACE_S);
    const live = new AbortController();
    const pass = await r.pass({ view: await listedView(ds), signal: live.signal });
    assert.deepEqual(
      pass.leaks?.reclaim.released.map((c) => c.address),
      ['10.74.0.2'],
    );
    assert.ok(rec.calls.some((c) => c.call === 'blocks.update' && c.ok));
    assert.deepEqual(await heldHandles(), []);
  });
});

describe('controller: grace periods after a restart (in memory, by design)', () => {
  test('a new leader starts every grace period again: later, never earlier', async () => {
    await seedLeak();
    const clock = new TestClock();
    const first = new Reconciler({
      ds,
      view: { notReady: () => 'unused' } as never,
      log: memoryLog(),
      clock: clock.now,
    });
    await first.pass({ view: await listedView(ds) });
    clock.advance(GRACE_S - 5);
    // Failover: the first leader dies 5 s before the leak would be due; a new process leads.
    const second = new Reconciler({
      ds,
      view: { notReady: () => 'unused' } as never,
      log: memoryLog(),
      clock: clock.now,
    });
    let pass = await second.pass({ view: await listedView(ds) });
    assert.deepEqual(pass.leaks?.reclaim.released, [], 'not at first sight');
    clock.advance(5);
    pass = await second.pass({ view: await listedView(ds) });
    assert.deepEqual(pass.leaks?.reclaim.released, [], 'not when the old leader would have released it');
    assert.deepEqual(await heldHandles(), ['net.lost.eth0']);
    clock.advance(GRACE_S - 5);
    pass = await second.pass({ view: await listedView(ds) });
    assert.deepEqual(
      pass.leaks?.reclaim.released.map((c) => c.address),
      ['10.74.0.2'],
      'a full grace period after the restart',
    );
  });
});
