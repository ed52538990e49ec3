/**
 * The IPAM server's view of its node's blocks (block-controller/agent/ipam/view-datastore.ts) over
 * the memory datastore, and STATUS from the last known state (ipam/status.ts): a LIST of the
 * node's blocks is answered from the watch with the agent's own writes laid over it; a lost
 * compare-and-swap re-reads the block into the view; other reads pass through; while the watch is
 * not current such a LIST goes to the API server; a DEL or CHECK that finds nothing in the view
 * asks the API server (core's `authority`) before answering; upkeep's claims and releases through
 * the view are seen at once; when the API server fails, STATUS answers from the node's own blocks
 * and the last pools.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  affineSelector,
  claimNodeBlock,
  familySelector,
  isConflict,
  MemoryDatastore,
  newBlock,
  parseCidr,
  releaseIdleBlock,
  snapshotOf,
  UnavailableError,
  withBlocks,
} from 'blockipam/core';
import type { Datastore, IPAMBlock, IPPool, ListOptions, Pod } from 'blockipam/core';
import { createNodeIpam, datastoreInputs } from 'blockipam/core/node-ipam';
import type { NodeInputs, NodeIpam } from 'blockipam/core/node-ipam';
import { agentNodeIpam } from '../../block-controller/agent/ipam/service.ts';
import { createViewDatastore, lastKnownDatastore } from '../../block-controller/agent/ipam/view-datastore.ts';
import { withLastKnownStatus } from '../../block-controller/agent/ipam/status.ts';
import { createAgentMetrics, observeConfirmLists } from '../../block-controller/agent/metrics.ts';
import { blocksWith } from '../helpers/blocks-with.ts';
import { ipamCalls } from '../helpers/ipam-calls.ts';
import { nodeHandles, quietLog } from './fixtures.ts';

const NODE = 'n1';
const NOW = Date.parse('2026-12-01T00:00:00Z');
const pool = (spec: Partial<IPPool['spec']> = {}): IPPool => ({
  apiVersion: 'ipam.blockipam.io/v1alpha1',
  kind: 'IPPool',
  metadata: { name: 'v4', creationTimestamp: '2026-01-01T00:00:00Z' },
  spec: { cidr: '10.70.0.0/16', blockSize: 26, ...spec },
});
const block = (cidr: string, node: string): IPAMBlock =>
  newBlock({ cidr: parseCidr(cidr)!, pool: 'v4', node, nowMs: NOW });

/** A memory store with two blocks of n1 and one of n2, and a "watch" that holds what it is given. */
async function setup(
  current: () => boolean = () => true,
  pods: Pod[] = [],
): Promise<{
  inner: MemoryDatastore;
  watch: IPAMBlock[];
  view: ReturnType<typeof createViewDatastore>;
}> {
  const inner = new MemoryDatastore({ pools: [pool()], pods });
  for (const b of [block('10.70.0.0/26', NODE), block('10.70.0.64/26', NODE), block('10.70.0.128/26', 'n2')])
    await inner.blocks.create(b);
  const watch = await inner.blocks.list({ labelSelector: affineSelector(NODE) });
  const view = createViewDatastore({ inner, node: NODE, watched: () => watch, current });
  return { inner, watch, view };
}

const names = (blocks: readonly IPAMBlock[]): string[] => blocks.map((b) => b.metadata.name);

describe('IPAM view datastore', () => {
  test('a LIST of the node’s blocks comes from the watch; another selector goes to the API', async () => {
    const { view } = await setup();
    assert.deepEqual(names(await view.blocks.list({ labelSelector: affineSelector(NODE) })), [
      '10-70-0-0-26',
      '10-70-0-64-26',
    ]);
    assert.deepEqual(view.stats, { viewLists: 1, blockReads: 0, directLists: 0, confirmLists: 0 });
    assert.equal((await view.blocks.list({ labelSelector: familySelector(4) })).length, 3);
    assert.deepEqual(view.stats, { viewLists: 1, blockReads: 1, directLists: 0, confirmLists: 0 });
  });

  test('its own UPDATE is seen at once, before the watch has it; then the watch wins again', async () => {
    const { inner, watch, view } = await setup();
    const [first] = await view.blocks.list({ labelSelector: affineSelector(NODE) });
    assert.ok(first);
    const written = await view.blocks.update({
      ...first,
      metadata: { ...first.metadata, annotations: { mark: 'ours' } },
    });
    const seen = (await view.blocks.list({ labelSelector: affineSelector(NODE) }))[0];
    assert.equal(seen?.metadata.annotations?.mark, 'ours', 'the view has the write');
    // the watch catches up, and a later write by someone else arrives through it
    const other = await inner.blocks.update({
      ...written,
      metadata: { ...written.metadata, annotations: { mark: 'theirs' } },
    });
    watch[0] = other;
    view.observe(other);
    assert.equal(
      (await view.blocks.list({ labelSelector: affineSelector(NODE) }))[0]?.metadata.annotations?.mark,
      'theirs',
    );
  });

  test('its own DELETE hides the block while the watch still shows it', async () => {
    const { view } = await setup();
    const [first] = await view.blocks.list({ labelSelector: affineSelector(NODE) });
    assert.ok(first);
    await view.blocks.delete(first.metadata.name, { resourceVersion: first.metadata.resourceVersion! });
    assert.deepEqual(names(await view.blocks.list({ labelSelector: affineSelector(NODE) })), [
      '10-70-0-64-26',
    ]);
  });

  test('a lost compare-and-swap re-reads the block into the view', async () => {
    const { inner, view } = await setup();
    const [stale] = await view.blocks.list({ labelSelector: affineSelector(NODE) });
    assert.ok(stale);
    await inner.blocks.update({ ...stale, metadata: { ...stale.metadata, annotations: { mark: 'theirs' } } });
    await assert.rejects(view.blocks.update(stale), (e) => isConflict(e));
    const now = (await view.blocks.list({ labelSelector: affineSelector(NODE) }))[0];
    assert.equal(now?.metadata.annotations?.mark, 'theirs', 'the retry starts from the block as it is');
  });
});

const sig = (): AbortSignal => AbortSignal.timeout(5_000);
const { attachment, addCall } = ipamCalls(NODE);
/** Handles allocated in the API server's (inner) blocks of the node. */
const handles = (inner: MemoryDatastore): Promise<string[]> => nodeHandles(inner, NODE);

/** The agent's service as ipam/index.ts makes it: misses confirmed through `view.direct`. */
const agentIpam = (inner: MemoryDatastore, view: ReturnType<typeof createViewDatastore>): NodeIpam =>
  agentNodeIpam({ node: NODE, view, authority: view.direct, inputs: datastoreInputs(inner), log: quietLog })
    .ipam;

describe('DEL and CHECK on a view that lags another writer', () => {
  /** A view that has not seen the allocation of handle net.<id>.eth0 the direct path just wrote. */
  const behind = async (id: string) => {
    const { inner, view } = await setup();
    // the plugin's direct path writes at the API server; the watch (frozen here) has not seen it
    const added = await createNodeIpam({ ds: inner, inputs: datastoreInputs(inner) }).add(addCall(id), sig());
    assert.equal(added.kind, 'allocated');
    const ip = added.kind === 'allocated' ? (added.ips[0]?.address.split('/')[0] ?? '') : '';
    return { inner, view, ip, ipam: agentIpam(inner, view) };
  };

  test('DEL of an allocation written behind the view releases it at the API server', async () => {
    const { inner, view, ipam } = await behind('d1');
    assert.deepEqual(await ipam.del({ attachment: attachment('d1'), node: NODE }, sig()), { released: 1 });
    assert.deepEqual(await handles(inner), [], 'released, not leaked');
    assert.equal(view.stats.directLists, 1, 'one LIST at the API server for the miss');
    // the release is laid over the view: a repeated DEL releases nothing (after one more LIST)
    assert.deepEqual(await ipam.del({ attachment: attachment('d1'), node: NODE }, sig()), { released: 0 });
  });

  test('CHECK of an allocation written behind the view finds it; the answer is laid over the view', async () => {
    const { view, ip, ipam } = await behind('c1');
    const check = { attachment: attachment('c1'), node: NODE, expectedIPs: [ip] };
    assert.deepEqual(await ipam.check(check, sig()), { kind: 'ok' });
    assert.equal(view.stats.directLists, 1);
    // the block as listed at the API server is now in the view: no second LIST
    assert.deepEqual(await ipam.check(check, sig()), { kind: 'ok' });
    assert.equal(view.stats.directLists, 1);
  });

  test('a hit in the view asks nothing more; a handle held nowhere costs one LIST', async () => {
    const { inner, view } = await setup();
    const ipam = agentIpam(inner, view);
    assert.equal((await ipam.add(addCall('own'), sig())).kind, 'allocated');
    assert.deepEqual(await ipam.del({ attachment: attachment('own'), node: NODE }, sig()), { released: 1 });
    assert.equal(view.stats.directLists, 0, 'its own allocation was in the view');
    assert.deepEqual(await ipam.del({ attachment: attachment('never'), node: NODE }, sig()), { released: 0 });
    assert.equal(view.stats.directLists, 1);
  });

  test('a pod UID mismatch found in the view is an answer, not a miss', async () => {
    const pod: Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: 'ns', uid: 'uid-a' },
      spec: { nodeName: NODE },
    };
    const { inner, view } = await setup(undefined, [pod]);
    const ipam = agentIpam(inner, view);
    const added = await ipam.add(
      { ...addCall('u'), pod: { namespace: 'ns', name: 'p', uid: 'uid-a' } },
      sig(),
    );
    assert.equal(added.kind, 'allocated');
    const del = { attachment: attachment('u'), node: NODE, podUID: 'uid-b' };
    assert.deepEqual(await ipam.del(del, sig()), { released: 0 });
    assert.equal(view.stats.directLists, 0);
  });

  test('DEL of a dual-stack handle the view holds only in part releases both addresses', async () => {
    const v6 = pool({ cidr: 'fd00:70::/112', blockSize: 122 });
    const inner = new MemoryDatastore({
      pools: [pool(), { ...v6, metadata: { ...v6.metadata, name: 'v6' } }],
    });
    const b4 = block('10.70.0.0/26', NODE);
    const b6 = newBlock({ cidr: parseCidr('fd00:70::/122')!, pool: 'v6', node: NODE, nowMs: NOW });
    for (const b of [b4, b6]) await inner.blocks.create(b);
    const before6 = await inner.blocks.get(b6.metadata.name);
    // the plugin's direct path allocates both families under one handle
    const added = await createNodeIpam({ ds: inner, inputs: datastoreInputs(inner) }).add(
      addCall('ds1', [4, 6]),
      sig(),
    );
    assert.equal(added.kind === 'allocated' ? added.ips.length : 0, 2, JSON.stringify(added));
    // the watch delivered the IPv4 block's UPDATE, not yet the IPv6 block's
    const watch = [(await inner.blocks.get(b4.metadata.name))!, before6!];
    const view = createViewDatastore({ inner, node: NODE, watched: () => watch });
    const ipam = agentIpam(inner, view);
    const ips = added.kind === 'allocated' ? added.ips.map((ip) => ip.address.split('/')[0] ?? '') : [];
    const check = { attachment: attachment('ds1'), node: NODE, expectedIPs: ips };
    assert.deepEqual(
      await ipam.check(check, sig()),
      { kind: 'ok' },
      'CHECK confirms the address the view lacks',
    );
    assert.deepEqual(await ipam.del({ attachment: attachment('ds1'), node: NODE }, sig()), { released: 2 });
    const left = (await inner.blocks.list({ labelSelector: affineSelector(NODE) })).flatMap((b) =>
      Object.values(b.spec.allocations).map((a) => a.handle),
    );
    assert.deepEqual(left, [], 'both released at the API server: no leak');
    assert.equal(view.stats.confirmLists, 2, 'CHECK, then DEL of a handle the agent did not allocate');
  });

  test('while the watch is not current, LISTs of the node’s blocks go to the API server', async () => {
    let current = false;
    const { inner, view } = await setup(() => current);
    const added = await createNodeIpam({ ds: inner, inputs: datastoreInputs(inner) }).add(
      addCall('d1'),
      sig(),
    );
    assert.equal(added.kind, 'allocated');
    const listed = await view.blocks.list({ labelSelector: affineSelector(NODE) });
    assert.deepEqual(
      listed.flatMap((b) => Object.values(b.spec.allocations).map((a) => a.handle)),
      ['net.d1.eth0'],
    );
    assert.deepEqual([view.stats.viewLists, view.stats.directLists], [0, 1]);
    // that answer was laid over the view: once current again, the view has the allocation
    current = true;
    const seen = await view.blocks.list({ labelSelector: affineSelector(NODE) });
    assert.deepEqual(
      seen.flatMap((b) => Object.values(b.spec.allocations).map((a) => a.handle)),
      ['net.d1.eth0'],
    );
    // the last known state (STATUS in an outage) never asks the API server
    current = false;
    assert.equal(
      (await lastKnownDatastore(view, NODE).blocks.list({ labelSelector: affineSelector(NODE) })).length,
      2,
    );
    assert.equal(view.stats.directLists, 1);
  });
});

describe('upkeep’s writes through the view', () => {
  test('a pre-claimed block is in the view at once; an idle block released leaves it at once', async () => {
    const { view } = await setup();
    const snapshot = snapshotOf({ config: undefined, pools: [pool()], reservations: [] }, NOW);
    const claimed = await claimNodeBlock(view, {
      pool: pool(),
      node: NODE,
      reservations: snapshot.reservations,
      held: 2,
      maxBlocksPerNode: snapshot.settings.maxBlocksPerNode,
      pools: snapshot.pools,
    });
    assert.ok(typeof claimed === 'object', `claimed: ${JSON.stringify(claimed)}`);
    const own = async () => names(await view.blocks.list({ labelSelector: affineSelector(NODE) }));
    assert.ok((await own()).includes(claimed.metadata.name), 'seen before the watch has it');
    assert.equal(await releaseIdleBlock(view, claimed), true);
    assert.ok(!(await own()).includes(claimed.metadata.name), 'gone before the watch says so');
  });
});

describe('STATUS from the last known state', () => {
  const failing = (error: Error): NodeIpam => {
    const fail = () => Promise.reject(error);
    return { add: fail, del: fail, check: fail, gc: fail, status: fail };
  };
  const inputs = (pools: IPPool[]): NodeInputs => ({
    snapshot: () => snapshotOf({ config: undefined, pools, reservations: [] }, NOW),
    nodeLabels: () => ({}),
    pod: () => undefined,
    namespace: () => undefined,
  });
  const status = async (ipam: NodeIpam, pools: IPPool[]) => {
    const { view } = await setup();
    return withLastKnownStatus({
      ipam,
      lastKnown: lastKnownDatastore(view, NODE),
      inputs: inputs(pools),
      log: quietLog,
    }).status({ node: NODE, families: [4], pools: { 4: [], 6: [] } }, AbortSignal.timeout(5_000));
  };

  test('API server unreachable, the node’s block has room: ready', async () =>
    assert.deepEqual(await status(failing(new UnavailableError('connect ECONNREFUSED')), [pool()]), {
      kind: 'ready',
    }));

  test('API server unreachable, no pool for this node: not ready, naming why', async () => {
    const outcome = await status(failing(new UnavailableError('down')), [
      pool({ nodeSelector: { matchLabels: { zone: 'elsewhere' } } }),
    ]);
    assert.equal(outcome.kind, 'notReady');
    assert.match(outcome.kind === 'notReady' ? outcome.message : '', /no usable IPv4 pool for node n1/);
  });

  test('a failure that is not the API server’s is not hidden', async () =>
    assert.rejects(status(failing(new Error('a bug')), [pool()]), /a bug/));
});

/** A promise and its resolve. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** The gate of {@link gatedInner}: held while `promise` is set; `sent` is told of each read it holds. */
interface Gate {
  promise?: Promise<void>;
  sent?: () => void;
}

/**
 * `inner` whose LISTs and GETs of blocks read the store at once but answer only once the gate set
 * when they were sent (if any) resolves: a read in flight across whatever the test does meanwhile.
 */
function gatedInner(inner: MemoryDatastore): { ds: Datastore; gate: Gate } {
  const gate: Gate = {};
  const ds = withBlocks(inner, {
    ...inner.blocks,
    async get(n, o) {
      const held = gate.promise;
      const got = await inner.blocks.get(n, o);
      if (held) {
        gate.sent?.();
        await held;
      }
      return got;
    },
    listMetadata: (o) => inner.blocks.listMetadata(o),
    listPage: (o) => inner.blocks.listPage(o),
    create: (b, o) => inner.blocks.create(b, o),
    update: (b, o) => inner.blocks.update(b, o),
    delete: (n, p, o) => inner.blocks.delete(n, p, o),
    async list(o?: ListOptions) {
      const held = gate.promise; // the gate as it is when the LIST is sent
      const listed = await inner.blocks.list(o);
      if (held) {
        gate.sent?.();
        await held;
      }
      return listed;
    },
  });
  return { ds, gate };
}

describe('confirmation LISTs', () => {
  test('kubelet’s double DEL: the second DEL of a handle the agent released sends no LIST', async () => {
    const { inner, view } = await setup();
    const metrics = createAgentMetrics();
    observeConfirmLists(metrics, NODE, () => view.stats.confirmLists);
    const ipam = agentIpam(inner, view);
    for (let i = 0; i < 20; i++) {
      assert.equal((await ipam.add(addCall(`p${i}`), sig())).kind, 'allocated');
      assert.deepEqual(await ipam.del({ attachment: attachment(`p${i}`), node: NODE }, sig()), {
        released: 1,
      });
      assert.deepEqual(await ipam.del({ attachment: attachment(`p${i}`), node: NODE }, sig()), {
        released: 0,
      });
    }
    assert.deepEqual(await handles(inner), []);
    assert.equal(view.stats.confirmLists, 0, 'no LIST for the 20 second DELs');
    assert.equal(view.stats.directLists, 0);
    const scraped = async (): Promise<string | undefined> =>
      /^blockipam_agent_ipam_confirm_lists_total\{node="n1"[^}]*\} (\d+)$/m.exec(
        await metrics.registry.metrics(),
      )?.[1];
    assert.equal(await scraped(), '0');
    // a handle the agent never released still costs one LIST, and the metric counts it
    assert.deepEqual(await ipam.del({ attachment: attachment('never'), node: NODE }, sig()), { released: 0 });
    assert.equal(view.stats.confirmLists, 1);
    assert.equal(await scraped(), '1');
  });

  test('an ADD whose caller gave up while its UPDATE was in flight: the write counts as the agent’s', async () => {
    const { inner, watch } = await setup();
    const open = deferred();
    const arrived = deferred();
    const gated = blocksWith(inner, {
      update: async (x, o) => {
        arrived.resolve();
        await open.promise;
        return inner.blocks.update(x, o);
      },
    });
    const view = createViewDatastore({ inner: gated, node: NODE, watched: () => watch });
    const ipam = agentIpam(inner, view);
    const client = new AbortController();
    const adding = ipam.add(addCall('late'), client.signal);
    await arrived.promise;
    client.abort(new Error('the client gave up'));
    await assert.rejects(adding, /the client gave up/);
    open.resolve(); // the UPDATE lands after all
    while (view.written('net.late.eth0') === undefined) await new Promise((r) => setImmediate(r));
    assert.deepEqual(await handles(inner), ['net.late.eth0']);
    // the runtime's DEL: the view holds the whole handle, so no LIST
    assert.deepEqual(await ipam.del({ attachment: attachment('late'), node: NODE }, sig()), { released: 1 });
    assert.equal(view.stats.confirmLists, 0);
    assert.deepEqual(await handles(inner), []);
  });

  test('concurrent misses share LISTs: at most one in flight and one pending', async () => {
    const { inner: memory, watch } = await setup();
    const { ds: inner, gate } = gatedInner(memory);
    const view = createViewDatastore({ inner, node: NODE, watched: () => watch });
    const N = 12;
    let asked = 0;
    const allAsked = deferred();
    // the authority as the service sees it: counts the misses that reach it
    const authority = withBlocks(view.direct, {
      ...view.direct.blocks,
      list: (o?: ListOptions) => {
        if (++asked === N) allAsked.resolve();
        return view.direct.blocks.list(o);
      },
    });
    const ipam = agentNodeIpam({
      node: NODE,
      view,
      authority,
      inputs: datastoreInputs(memory),
      log: quietLog,
    }).ipam;
    const open = deferred();
    gate.promise = open.promise;
    const dels = Array.from({ length: N }, (_, i) =>
      ipam.del({ attachment: attachment(`gone${i}`), node: NODE }, sig()),
    );
    await allAsked.promise; // every DEL missed in the view and asked while the first LIST is held
    open.resolve();
    assert.deepEqual(
      await Promise.all(dels),
      Array.from({ length: N }, () => ({ released: 0 })),
    );
    assert.equal(asked, N);
    assert.ok(view.stats.confirmLists <= 2, `${view.stats.confirmLists} LISTs for ${N} misses`);
    assert.equal(view.stats.confirmLists, 2, 'the first, and one shared by the misses after it');
  });

  /** A LIST of the node's blocks through `direct`, held in flight across upkeep's release of a block. */
  const acrossDelete = async () => {
    const { inner: memory, watch } = await setup();
    const { ds: inner, gate } = gatedInner(memory);
    const view = createViewDatastore({ inner, node: NODE, watched: () => watch });
    const own = async () => names(await view.blocks.list({ labelSelector: affineSelector(NODE) }));
    const idle = watch[0]!;
    const open = deferred();
    gate.promise = open.promise;
    const listing = view.direct.blocks.list({ labelSelector: affineSelector(NODE) });
    gate.promise = undefined;
    assert.equal(await releaseIdleBlock(view, idle), true);
    assert.equal((await memory.blocks.list({ labelSelector: affineSelector(NODE) })).length, 1);
    assert.ok(!(await own()).includes(idle.metadata.name), 'gone at once');
    return { view, watch, own, idle, listing, open };
  };

  test('a LIST in flight across the agent’s delete does not bring the block back', async () => {
    const { view, watch, own, idle, listing, open } = await acrossDelete();
    open.resolve();
    assert.ok(names(await listing).includes(idle.metadata.name), 'the LIST was read before the delete');
    assert.ok(!(await own()).includes(idle.metadata.name), 'still gone with the LIST answered');
    // then the watch delivers the DELETE
    watch.splice(watch.indexOf(idle), 1);
    view.observe(idle);
    assert.deepEqual(await own(), ['10-70-0-64-26'], 'no zombie once the watch caught up');
  });

  test('a LIST answered after the watch delivered the delete does not bring the block back', async () => {
    const { view, watch, own, idle, listing, open } = await acrossDelete();
    watch.splice(watch.indexOf(idle), 1);
    view.observe(idle);
    assert.deepEqual(await own(), ['10-70-0-64-26'], 'the watch caught up (the overlay dropped)');
    open.resolve();
    assert.ok(names(await listing).includes(idle.metadata.name), 'the LIST was read before the delete');
    assert.deepEqual(await own(), ['10-70-0-64-26'], 'no zombie');
  });

  /**
   * Another writer changes the node's block behind the watch, so the view's UPDATE of its stale
   * copy loses; returned once that UPDATE's re-read has read the block, its answer held until `open`.
   */
  const losingReRead = async () => {
    const { inner: memory, watch } = await setup();
    const { ds: inner, gate } = gatedInner(memory);
    const view = createViewDatastore({ inner, node: NODE, watched: () => watch });
    const stale = watch[0]!;
    const theirs = await memory.blocks.update({
      ...stale,
      metadata: { ...stale.metadata, annotations: { mark: 'theirs' } },
    });
    const open = deferred();
    const reading = deferred();
    gate.promise = open.promise;
    gate.sent = reading.resolve;
    const losing = view.blocks.update(stale);
    await reading.promise;
    gate.promise = undefined;
    return { memory, watch, view, stale, theirs, losing, open };
  };

  test('a re-read after a lost compare-and-swap, answered after the watch’s DELETE, brings nothing back', async () => {
    const { memory, watch, view, stale, theirs, losing, open } = await losingReRead();
    const own = async () => names(await view.blocks.list({ labelSelector: affineSelector(NODE) }));
    // meanwhile the block is deleted and the watch delivers the DELETE
    await memory.blocks.delete(theirs.metadata.name, { resourceVersion: theirs.metadata.resourceVersion! });
    watch.splice(watch.indexOf(stale), 1);
    view.observe(theirs);
    open.resolve();
    await assert.rejects(losing, (e) => isConflict(e));
    assert.deepEqual(await own(), ['10-70-0-64-26'], 'no zombie: the re-read’s older copy is not laid');
  });

  test('a copy read before the watch’s newer one never replaces it', async () => {
    const { memory, watch, view, theirs, losing, open } = await losingReRead();
    // a later write arrives through the watch before the re-read answers
    const newest = await memory.blocks.update({
      ...theirs,
      metadata: { ...theirs.metadata, annotations: { mark: 'newest' } },
    });
    watch[0] = newest;
    view.observe(newest);
    open.resolve();
    await assert.rejects(losing, (e) => isConflict(e));
    // deleting it without preconditions takes the view's resourceVersion: the watch's, not the re-read's
    await view.blocks.delete(newest.metadata.name);
    assert.deepEqual(
      names(await view.blocks.list({ labelSelector: affineSelector(NODE) })),
      ['10-70-0-64-26'],
      'the deletion is laid at the newest resourceVersion: the watch’s copy does not show through',
    );
  });

  test('concurrent DELs confirmed at the API server release in batched UPDATEs', async () => {
    const { inner, view } = await setup();
    // the plugin's direct path allocated N addresses in the node's block; the view has none
    const direct = createNodeIpam({ ds: inner, inputs: datastoreInputs(inner) });
    const N = 12;
    for (let i = 0; i < N; i++) assert.equal((await direct.add(addCall(`b${i}`), sig())).kind, 'allocated');
    const { ipam, batching } = agentNodeIpam({
      node: NODE,
      view,
      authority: view.direct,
      inputs: datastoreInputs(inner),
      log: quietLog,
      sleep: () => Promise.resolve(), // a lost race retries at once: the memory store answers in a tick
    });
    const writesBefore = inner.stats.writes;
    const dels = await Promise.all(
      Array.from({ length: N }, (_, i) => ipam.del({ attachment: attachment(`b${i}`), node: NODE }, sig())),
    );
    assert.deepEqual(
      dels,
      Array.from({ length: N }, () => ({ released: 1 })),
    );
    assert.deepEqual(await handles(inner), [], 'every address released at the API server');
    assert.ok(view.stats.confirmLists >= 1, 'the DELs were confirmed at the API server');
    const puts = inner.stats.writes - writesBefore;
    assert.equal(puts, batching.stats().updatesSent, 'every block UPDATE went through the batches');
    assert.equal(batching.stats().changesWritten, N);
    assert.ok(puts <= 3, `${puts} block UPDATEs for ${N} DELs: ${JSON.stringify(batching.stats())}`);
  });
});
