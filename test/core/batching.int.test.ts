// The batching decorator over the REAL API server: 100 concurrent ADDs of one node (as the node
// agent serves a burst of pod starts) share few UPDATEs. Prints UPDATEs per ADD and wall time;
// asserts all addresses distinct, every answered address stored (nothing lost), ≤ 0.2 UPDATEs
// per ADD without other writers, and clean block invariants. Further bursts run beside other
// writers: 10 ADDs of a standalone plugin on the same node, and 3 forced 409s (another client
// changes the block right before each of the decorator's first 8 UPDATEs), the latter with
// core's default backoff and with the agent's capped one (docs/design-core.md §Batched block writes).
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import {
  autoAssign,
  checkBlockInvariants,
  batchedBackoffSleep,
  createBatchingDatastore,
  loadSnapshot,
  newStats,
  withBlocks,
} from 'blockipam/core';
import type { AllocatorOptions, AutoAssignRequest, Datastore, IPAMBlock } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { adminDatastore, wipeBlockipam } from '../helpers/crds.ts';

const ADDS = 100;
let ds: KubeDatastore;
/** Another client: a standalone plugin (or the controller) writing the node's block beside the agent. */
let other: KubeDatastore;

before(async () => {
  ds = adminDatastore();
  other = adminDatastore();
  await wipeBlockipam(ds);
  // /25 blocks: one holds a node's burst (125 pod addresses), so every ADD writes its node's block.
  await ds.pools.create({ metadata: { name: 'batching' }, spec: { cidr: '10.61.0.0/20', blockSize: 25 } });
});
after(async () => {
  await wipeBlockipam(ds);
  ds.close();
  other.close();
});

/** `ds`, except that another client touches the block right before each of the first `n` UPDATEs. */
function touchingBefore(n: number): Datastore {
  let left = n;
  const touch = async (name: string): Promise<void> => {
    const b = (await other.blocks.get(name)) as IPAMBlock;
    await other.blocks.update({ ...b, metadata: { ...b.metadata, annotations: { touched: String(left) } } });
  };
  return withBlocks(ds, {
    get: (name, o) => ds.blocks.get(name, o),
    list: (o) => ds.blocks.list(o),
    listMetadata: (o) => ds.blocks.listMetadata(o),
    listPage: (o) => ds.blocks.listPage(o),
    create: (b, o) => ds.blocks.create(b, o),
    delete: (name, pre, o) => ds.blocks.delete(name, pre, o),
    update: async (b, o) => {
      if (left > 0) {
        left -= 1;
        await touch(b.metadata.name);
      }
      return ds.blocks.update(b, o);
    },
  });
}

interface Run {
  name: string;
  node: string;
  options: AllocatorOptions;
  /** Direct ADDs of a standalone plugin on the same node, beside the burst. */
  foreign: number;
  /** UPDATEs of the decorator that meet a foreign change first (a server 409). */
  forced: number;
}

/** `ADDS` concurrent ADDs of `run.node` on a fresh decorator; UPDATE (PUT) count, wall time, stats. */
async function burst(run: Run) {
  const snapshot = await loadSnapshot(ds);
  const request = (id: string): AutoAssignRequest => ({
    handle: `k8s-pod-network.${run.node}-${id}.eth0`,
    node: run.node,
    pod: { namespace: 'load', name: `${run.node}-${id}`, uid: `${run.node}-u${id}` },
    snapshot,
    nodeLabels: {},
    namespaceLabels: {},
  });
  const bds = createBatchingDatastore(touchingBefore(run.forced));
  const stats = newStats();
  const before = { ...ds.transport.stats.byMethod };
  const started = performance.now();
  const direct = Array.from({ length: run.foreign }, (_, i) => autoAssign(other, request(`f${i}`), {}));
  const outcomes = await Promise.all(
    Array.from({ length: ADDS }, (_, i) => autoAssign(bds, request(String(i)), { ...run.options, stats })),
  );
  const wallMs = performance.now() - started;
  const answered = new Map<string, string>();
  for (const [i, o] of [...outcomes, ...(await Promise.all(direct))].entries()) {
    assert.ok(o.ok && o.ipv4, `ADD ${i}: ${JSON.stringify(o)}`);
    answered.set(request(i < ADDS ? String(i) : `f${i - ADDS}`).handle, o.ipv4.address);
  }
  const delta = (method: string): number =>
    (ds.transport.stats.byMethod[method] ?? 0) - (before[method] ?? 0);
  return { answered, puts: delta('PUT'), reads: delta('GET'), wallMs, stats, batching: bds.stats() };
}

it(`${ADDS} concurrent ADDs of one node over the batching decorator: ≤ 0.2 UPDATEs per ADD`, async () => {
  // The agent's allocator options: backoff sleeps capped at 10 ms, about one write round trip.
  const agent: AllocatorOptions = { sleep: batchedBackoffSleep() };
  const runs: Run[] = [
    { name: 'alone', node: 'node-a', options: {}, foreign: 0, forced: 0 },
    { name: 'alone, agent options', node: 'node-b', options: agent, foreign: 0, forced: 0 },
    { name: 'beside 10 standalone ADDs', node: 'node-c', options: {}, foreign: 10, forced: 0 },
    { name: '8 forced 409s, default options', node: 'node-d', options: {}, foreign: 0, forced: 8 },
    { name: '8 forced 409s, agent options', node: 'node-e', options: agent, foreign: 0, forced: 8 },
  ];
  const answered = new Map<string, string>();
  for (const run of runs) {
    // One ADD first claims the node's block: the burst measures allocation, not the claim.
    const warm = await autoAssign(
      ds,
      { handle: `k8s-pod-network.${run.node}-warm.eth0`, node: run.node },
      {},
    );
    assert.ok(warm.ok && warm.ipv4);
    answered.set(`k8s-pod-network.${run.node}-warm.eth0`, warm.ipv4.address);
    const got = await burst(run);
    console.log(
      `# ${run.name}: ${ADDS} ADDs, ${got.puts} UPDATEs = ${(got.puts / ADDS).toFixed(2)} per ADD, ` +
        `${got.reads} GETs and LISTs, ${got.wallMs.toFixed(0)} ms wall; batching ${JSON.stringify(got.batching)}; ` +
        `allocator conflicts ${got.stats.conflicts}, retries ${got.stats.retries}`,
    );
    for (const [handle, address] of got.answered) answered.set(handle, address);
    if (run.foreign === 0 && run.forced === 0)
      assert.ok(got.puts / ADDS <= 0.2, `${got.puts} UPDATEs for ${ADDS} ADDs`);
    assert.equal(got.batching.updatesSent, got.puts);
    assert.equal(got.batching.changesWritten, ADDS);
    assert.ok(got.batching.serverConflicts >= run.forced);
  }
  const blocks = await ds.blocks.list();
  assert.deepEqual(
    blocks.flatMap((b) => checkBlockInvariants(b, { nowMs: Date.now() })),
    [],
  );
  assert.equal(blocks.length, runs.length); // one block per node: nothing spilled over
  const stored = new Map(blocks.flatMap((b) => Object.values(b.spec.allocations)).map((a) => [a.handle, a]));
  assert.deepEqual([...stored.keys()].sort(), [...answered.keys()].sort());
  assert.equal(new Set(answered.values()).size, answered.size);
  for (const block of blocks)
    for (const [ordinal, a] of Object.entries(block.spec.allocations))
      assert.equal(
        answered.get(a.handle)?.split('.')[3],
        String(Number(block.spec.cidr.split('/')[0]!.split('.')[3]) + Number(ordinal)),
        `${a.handle} stored where it was answered`,
      );
});
