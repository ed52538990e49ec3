// The controller's leak and node steps on the real API server: seeded leaks of each kind (pod
// gone, pod UID differs, node gone), the grace period on an injected clock, a pod alive
// elsewhere with the address, all-or-nothing per handle, (handle, sequence) preconditions, API
// errors meaning keep, and a deleted node's blocks: quarantined (affine, addresses allocated)
// for the node-gone grace, handed back when a Node of the name returns within it. The view is
// what the watches would show, read by LISTs at the moment each test chooses.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { IPAM_CONFIG_NAME, UnavailableError } from 'blockipam/core';
import type { Datastore, IPAMBlock, Pod } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { Reconciler } from '../../block-controller/controller/reconciler.ts';
import type { SeedAllocation } from '../cli/cluster.ts';
import {
  blockObject,
  cleanClusterHooks,
  createNode,
  createPod,
  deletePod,
  listedView,
  memoryLog,
  poolObject,
  TestClock,
  uniqueNamespace,
} from './helpers.ts';

const ns = uniqueNamespace('ctl-gc');
const GRACE_S = 60;
/** The deleted-node quarantine the tests' reconcilers use (the controller's default is 600 s). */
const QUARANTINE_S = 300;
let ds: KubeDatastore;

cleanClusterHooks({
  namespace: ns,
  nodes: ['ctl-n1', 'ctl-n2'],
  onReady: (d) => (ds = d),
  setup: async (d) => {
    await d.pools.create(poolObject('p4', '10.70.0.0/16'));
    await d.pools.create(poolObject('p6', 'fd00:70::/48'));
    await d.configs.create({
      metadata: { name: IPAM_CONFIG_NAME },
      spec: { leakGracePeriodSeconds: GRACE_S },
    });
  },
});

const owner = (
  id: string,
  node: string,
  pod?: Pod | string,
  podUID?: string,
): Omit<SeedAllocation, 'ordinal'> => ({
  handle: `net.${id}.eth0`,
  node,
  namespace: ns,
  pod: typeof pod === 'string' ? pod : (pod?.metadata.name ?? id),
  podUID: podUID ?? (typeof pod === 'object' ? pod.metadata.uid : `uid-${id}`),
});

async function seed(cidr: string, affinity: string | null, allocations: SeedAllocation[]): Promise<void> {
  const pool = cidr.includes(':') ? 'p6' : 'p4';
  await ds.blocks.create(blockObject({ cidr, pool, affinity, allocations }));
}

async function handles(block: string): Promise<string[]> {
  const b: IPAMBlock | undefined = await ds.blocks.get(block);
  return b
    ? Object.values(b.spec.allocations)
        .map((a) => a.handle)
        .sort()
    : ['<no block>'];
}

/** `target` with some members replaced (methods of the rest bound to it: private fields work). */
function overriding<T extends object>(target: T, members: (key: string | symbol) => unknown): T {
  return new Proxy(target, {
    get(t, key) {
      const replaced = members(key);
      if (replaced !== undefined) return replaced;
      const value = Reflect.get(t, key) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(t) : value;
    },
  });
}

function reconciler(clock: TestClock, datastore: Datastore = ds): Reconciler {
  return new Reconciler({
    ds: datastore,
    view: { notReady: () => 'unused' } as never,
    log: memoryLog(),
    clock: clock.now,
    nodeGoneGraceSeconds: QUARANTINE_S,
  });
}

describe('controller: leaked addresses', () => {
  test('pod gone and pod UID differs are released after the grace period, live pods kept', async () => {
    const alive = await createPod(ds, { namespace: ns, name: 'alive', node: 'ctl-n1', ip: '10.70.0.4' });
    const reborn = await createPod(ds, { namespace: ns, name: 'reborn', node: 'ctl-n1' });
    await seed('10.70.0.0/26', 'ctl-n1', [
      { ordinal: 2, ...owner('gone', 'ctl-n1') },
      { ordinal: 3, ...owner('reborn', 'ctl-n1', reborn, 'uid-of-the-old-reborn') },
      { ordinal: 4, ...owner('alive', 'ctl-n1', alive) },
      { ordinal: 5, handle: 'net.nopod.eth0', node: 'ctl-n1' }, // no pod recorded, node alive: kept
    ]);
    const clock = new TestClock();
    const r = reconciler(clock);
    let pass = await r.pass({ view: await listedView(ds) });
    assert.deepEqual(pass.leaks?.reclaim.released, [], 'nothing at first sight');
    assert.deepEqual(
      r.candidates
        .all()
        .map((c) => [c.address, c.reason])
        .sort(),
      [
        ['10.70.0.2', 'pod-gone'],
        ['10.70.0.3', 'pod-uid-differs'],
      ],
    );
    clock.advance(GRACE_S - 1);
    pass = await r.pass({ view: await listedView(ds) });
    assert.deepEqual(pass.leaks?.reclaim.released, [], 'grace period not over');
    clock.advance(1);
    pass = await r.pass({ view: await listedView(ds) });
    assert.deepEqual(pass.leaks?.reclaim.released.map((c) => c.address).sort(), ['10.70.0.2', '10.70.0.3']);
    assert.deepEqual(await handles('10-70-0-0-26'), ['net.alive.eth0', 'net.nopod.eth0']);
    assert.equal(r.candidates.size, 0);
  });

  test('a leak seen again after its pod came back starts a new grace period', async () => {
    await seed('10.70.0.0/26', 'ctl-n1', [{ ordinal: 2, ...owner('flap', 'ctl-n1', 'flap', undefined) }]);
    const clock = new TestClock();
    const r = reconciler(clock);
    await r.pass({ view: await listedView(ds) });
    assert.equal(r.candidates.size, 1);
    // The pod (with the recorded UID: no UID check possible here, so name alone) is seen again.
    const view = await listedView(ds);
    const flap = { metadata: { name: 'flap', namespace: ns, uid: 'uid-flap' }, spec: { nodeName: 'ctl-n1' } };
    clock.advance(GRACE_S / 2);
    await r.pass({ view: { ...view, pods: () => [...view.pods(), flap] } });
    assert.equal(r.candidates.size, 0);
    clock.advance(GRACE_S / 2);
    const pass = await r.pass({ view: await listedView(ds) });
    assert.deepEqual(pass.leaks?.reclaim.released, [], 'its grace period restarted');
    assert.deepEqual(await handles('10-70-0-0-26'), ['net.flap.eth0']);
  });

  test('a pod alive on another node with the address keeps it (calico #12257)', async () => {
    await createPod(ds, { namespace: ns, name: 'elsewhere', node: 'ctl-n2', ip: '10.70.0.5' });
    await seed('10.70.0.0/26', 'ctl-n1', [{ ordinal: 5, ...owner('moved', 'ctl-n1') }]);
    const clock = new TestClock();
    const r = reconciler(clock);
    await r.pass({ view: await listedView(ds) });
    clock.advance(GRACE_S * 2);
    const pass = await r.pass({ view: await listedView(ds) });
    assert.deepEqual(pass.leaks?.reclaim.released, []);
    assert.equal(r.candidates.size, 0, 'not even a candidate');
    assert.deepEqual(await handles('10-70-0-0-26'), ['net.moved.eth0']);
  });

  test('all or nothing per handle: a dual-stack handle with one address in use keeps both', async () => {
    const user = await createPod(ds, { namespace: ns, name: 'v4user', node: 'ctl-n2', ip: '10.70.0.66' });
    const dual = { ordinal: 2, ...owner('dual', 'ctl-n1') };
    await seed('10.70.0.64/26', 'ctl-n1', [dual]);
    await seed('fd00:70::/122', 'ctl-n1', [dual]);
    const clock = new TestClock();
    const r = reconciler(clock);
    await r.pass({ view: await listedView(ds) });
    assert.deepEqual(
      r.candidates.all().map((c) => c.address),
      ['fd00:70::2'],
      'only the IPv6 one looks leaked',
    );
    clock.advance(GRACE_S * 2);
    let pass = await r.pass({ view: await listedView(ds) });
    assert.deepEqual(pass.leaks?.reclaim.released, [], 'the handle is not released in part');
    assert.deepEqual(await handles('fd00-70---122'), ['net.dual.eth0']);
    // The other pod goes: the IPv4 allocation becomes a candidate now, and waits its own grace.
    await deletePod(ds, ns, user.metadata.name);
    pass = await r.pass({ view: await listedView(ds) });
    assert.deepEqual(pass.leaks?.reclaim.released, []);
    clock.advance(GRACE_S);
    pass = await r.pass({ view: await listedView(ds) });
    assert.deepEqual(pass.leaks?.reclaim.released.map((c) => c.address).sort(), ['10.70.0.66', 'fd00:70::2']);
  });

  test('(handle, sequence) preconditions: an ordinal handed out again meanwhile is not released', async () => {
    await seed('10.70.0.0/26', 'ctl-n1', [{ ordinal: 2, ...owner('old', 'ctl-n1') }]);
    const clock = new TestClock();
    const r = reconciler(clock);
    const stale = await listedView(ds);
    await r.pass({ view: stale });
    // The address is released and handed out again (another handle, same handle later) before
    // the controller's watch catches up.
    const block = (await ds.blocks.get('10-70-0-0-26')) as IPAMBlock;
    const sequence = block.spec.sequence + 1;
    const next = { ...block.spec.allocations['2']!, handle: 'net.old.eth0', sequence, podUID: 'uid-old' };
    await ds.blocks.update({ ...block, spec: { ...block.spec, sequence, allocations: { '2': next } } });
    clock.advance(GRACE_S);
    const pass = await r.pass({ view: stale });
    assert.deepEqual(pass.leaks?.reclaim.released, []);
    assert.equal(pass.leaks?.reclaim.skipped.length, 1, 'core refused the stale sequence');
    const after = (await ds.blocks.get('10-70-0-0-26')) as IPAMBlock;
    assert.equal(after.spec.allocations['2']?.sequence, sequence);
  });

  test('an API error in the fresh re-check keeps the handle', async () => {
    await seed('10.70.0.0/26', 'ctl-n1', [{ ordinal: 2, ...owner('err', 'ctl-n1') }]);
    const failing = overriding(ds, (key) =>
      key === 'getPod' ? () => Promise.reject(new UnavailableError('API server unreachable')) : undefined,
    );
    const clock = new TestClock();
    const r = reconciler(clock, failing);
    await r.pass({ view: await listedView(ds) });
    clock.advance(GRACE_S);
    const pass = await r.pass({ view: await listedView(ds) });
    assert.deepEqual(pass.leaks?.reclaim.released, []);
    assert.deepEqual(pass.leaks?.reclaim.kept, [{ handle: 'net.err.eth0', reason: 'api-error' }]);
    assert.deepEqual(await handles('10-70-0-0-26'), ['net.err.eth0']);
    // A watch that is not synced (or failing) means no pass at all.
    const skipped = await r.pass({ view: { ...(await listedView(ds)), notReady: () => 'pods: not synced' } });
    assert.equal(skipped.skipped, 'pods: not synced');
  });
});

test('controller: a release that fails (API error) keeps its candidates for the next pass', async () => {
  await seed('10.70.0.0/26', 'ctl-n1', [{ ordinal: 2, ...owner('flaky', 'ctl-n1') }]);
  let down = true;
  const blocks = overriding(ds.blocks, (key) =>
    down && key === 'update'
      ? () => Promise.reject(new UnavailableError('API server unreachable'))
      : undefined,
  );
  const failing = overriding(ds, (key) => (key === 'blocks' ? blocks : undefined));
  const clock = new TestClock();
  const r = reconciler(clock, failing);
  await r.pass({ view: await listedView(ds) });
  clock.advance(GRACE_S);
  const pass = await r.pass({ view: await listedView(ds) });
  assert.deepEqual(pass.leaks?.reclaim.released, []);
  assert.equal(pass.leaks?.reclaim.failed.length, 1);
  assert.equal(r.candidates.size, 1, 'still a candidate');
  assert.deepEqual(await handles('10-70-0-0-26'), ['net.flaky.eth0']);
  down = false;
  const retried = await r.pass({ view: await listedView(ds) });
  console.log(
    'DBG',
    String(retried.leaks?.reclaim.failed[0]?.error),
    r.candidates.size,
    JSON.stringify(retried.leaks?.reclaim.kept),
  );
  assert.deepEqual(
    retried.leaks?.reclaim.released.map((c) => c.address),
    ['10.70.0.2'],
    'released on the next pass',
  );
});

describe('controller: deleted nodes', () => {
  test("a deleted node's allocations go after its quarantine, then its blocks; other nodes' borrowed addresses stay", async () => {
    const live = await createPod(ds, { namespace: ns, name: 'borrower', node: 'ctl-n1', ip: '10.70.1.70' });
    await seed('10.70.1.0/26', 'ctl-gone', [{ ordinal: 2, ...owner('ongone', 'ctl-gone') }]);
    await seed('10.70.1.64/26', 'ctl-gone', [{ ordinal: 6, ...owner('borrower', 'ctl-n1', live) }]);
    // A second deleted node whose pod object still exists: kept until the pod is gone.
    const stuck = await createPod(ds, { namespace: ns, name: 'stuck', node: 'ctl-gone2' });
    await seed('10.70.2.0/26', 'ctl-gone2', [{ ordinal: 2, ...owner('stuck', 'ctl-gone2', stuck) }]);
    const clock = new TestClock();
    const r = reconciler(clock);
    // quarantined: its sandboxes may still run (a Node deleted while its kubelet runs)
    for (const advance of [0, QUARANTINE_S - 1]) {
      clock.advance(advance);
      const held = await r.pass({ view: await listedView(ds) });
      assert.deepEqual(held.leaks?.reclaim.released, []);
      assert.deepEqual(held.nodes?.quarantined, ['ctl-gone', 'ctl-gone2']);
      assert.deepEqual(held.nodes?.nodes, []);
      assert.deepEqual(await handles('10-70-1-0-26'), ['net.ongone.eth0']);
      assert.equal((await ds.blocks.get('10-70-1-0-26'))?.spec.affinity, 'ctl-gone');
    }
    clock.advance(1);
    const pass = await r.pass({ view: await listedView(ds) });
    assert.deepEqual(
      pass.leaks?.reclaim.released.map((c) => [c.address, c.reason]),
      [['10.70.1.2', 'node-gone']],
    );
    assert.deepEqual(pass.nodes?.nodes, ['ctl-gone']);
    assert.deepEqual(pass.nodes?.deletedBlocks, ['10-70-1-0-26']);
    assert.deepEqual(pass.nodes?.unownedBlocks, ['10-70-1-64-26']);
    assert.deepEqual(pass.nodes?.waiting, ['ctl-gone2']);
    assert.equal(await ds.blocks.get('10-70-1-0-26'), undefined);
    assert.equal((await ds.blocks.get('10-70-1-64-26'))?.spec.affinity, null);
    assert.deepEqual(await handles('10-70-1-64-26'), ['net.borrower.eth0']);
    assert.deepEqual(await handles('10-70-2-0-26'), ['net.stuck.eth0']);
    // The pod GC deletes the stuck pod: its address and then the node's block go.
    await deletePod(ds, ns, 'stuck');
    const next = await r.pass({ view: await listedView(ds) });
    assert.deepEqual(next.nodes?.nodes, ['ctl-gone2']);
    assert.equal(await ds.blocks.get('10-70-2-0-26'), undefined);
  });

  test('nothing is released when the fresh GET finds the node after all', async () => {
    await seed('10.70.1.0/26', 'ctl-n2', [{ ordinal: 2, ...owner('late', 'ctl-n2') }]);
    const clock = new TestClock();
    const r = reconciler(clock);
    const view = await listedView(ds);
    // The node watch is behind: ctl-n2 looks deleted, through its quarantine.
    const behind = { ...view, nodeNames: () => ['ctl-n1'] };
    assert.deepEqual((await r.pass({ view: behind })).nodes?.quarantined, ['ctl-n2']);
    clock.advance(QUARANTINE_S);
    const pass = await r.pass({ view: behind });
    assert.deepEqual(pass.leaks?.reclaim.released, []);
    assert.deepEqual(pass.leaks?.reclaim.kept, [{ handle: 'net.late.eth0', reason: 'node-exists' }]);
    assert.deepEqual(await handles('10-70-1-0-26'), ['net.late.eth0']);
  });

  test('a deleted node back within its quarantine keeps its blocks; its allocations then get the leak grace', async () => {
    await seed('10.70.3.0/26', 'ctl-back', [{ ordinal: 2, ...owner('gcd', 'ctl-back') }]);
    const clock = new TestClock();
    const r = reconciler(clock);
    const first = await r.pass({ view: await listedView(ds) });
    assert.deepEqual(first.nodes?.quarantined, ['ctl-back']);
    clock.advance(QUARANTINE_S - 1);
    // the kubelet registers the Node again (another uid, maybe another spec.podCIDR: not read)
    await createNode(ds, 'ctl-back');
    for (const advance of [0, GRACE_S - 1]) {
      clock.advance(advance);
      const back = await r.pass({ view: await listedView(ds) });
      assert.deepEqual(back.leaks?.reclaim.released, [], `${advance} s after the return`);
      assert.deepEqual(back.nodes?.quarantined, []);
      assert.equal((await ds.blocks.get('10-70-3-0-26'))?.spec.affinity, 'ctl-back');
      assert.deepEqual(await handles('10-70-3-0-26'), ['net.gcd.eth0']);
    }
    // its pod is gone for good (the kubelet sent no DEL): released as any pod-gone leak
    clock.advance(1);
    const leaked = await r.pass({ view: await listedView(ds) });
    assert.deepEqual(
      leaked.leaks?.reclaim.released.map((c) => [c.address, c.reason]),
      [['10.70.3.2', 'pod-gone']],
    );
    assert.equal((await ds.blocks.get('10-70-3-0-26'))?.spec.affinity, 'ctl-back');
  });
});
