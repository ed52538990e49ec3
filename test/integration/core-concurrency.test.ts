// Concurrency on the REAL API server: 9 simulated nodes × 50 parallel allocations each (450 at
// once) in a pool of 8 blocks with maxBlocksPerNode 1, so at least one node must borrow; an
// empty-block release loop runs throughout; then two nodes are "deleted" (release everything +
// release their blocks) while the borrowing node churns. After each phase: every address unique,
// every reported allocation persisted (and nothing else), every block invariant true.
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  addressTextAt,
  autoAssign,
  checkBlockInvariants,
  loadSnapshot,
  mustParseCidr,
  newStats,
  releaseByHandle,
  releaseEmptyBlocks,
  releaseNodeBlocks,
} from '../../core/index.ts';
import type { AllocatorStats, KubeDatastore, PoolSnapshot } from '../../core/index.ts';
import { kubeDatastore, wipe } from './core-cluster.ts';

const NODES = Array.from({ length: 9 }, (_, i) => `sim-node-${i}`);
const PER_NODE = 50;
let ds: KubeDatastore;

before(async () => {
  ds = kubeDatastore();
  await wipe(ds);
  await ds.configs.create({
    metadata: { name: 'default' },
    spec: { maxBlocksPerNode: 1, emptyBlockReleaseSeconds: 0 },
  });
  await ds.pools.create({ metadata: { name: 'concurrency' }, spec: { cidr: '10.60.0.0/23', blockSize: 26 } });
});
after(async () => {
  await wipe(ds);
  ds.close();
});

/** handle → address, as the allocator reported. */
type Model = Map<string, string>;

async function allocate(
  node: string,
  ids: readonly number[],
  snapshot: PoolSnapshot,
  stats: AllocatorStats,
  model: Model,
): Promise<void> {
  const outcomes = await Promise.all(
    ids.map((i) => {
      const handle = `k8s-pod-network.${node}-c${i}.eth0`;
      return autoAssign(
        ds,
        {
          handle,
          node,
          pod: { namespace: 'load', name: `${node}-p${i}`, uid: `${node}-u${i}` },
          snapshot,
          nodeLabels: {},
          namespaceLabels: {},
        },
        { stats },
      ).then((o) => ({ handle, o }));
    }),
  );
  for (const { handle, o } of outcomes) {
    assert.ok(o.ok && o.ipv4, `${handle}: ${JSON.stringify(o)}`);
    model.set(handle, o.ipv4.address);
  }
}

async function verify(model: Model): Promise<void> {
  const blocks = await ds.blocks.list();
  assert.deepEqual(
    blocks.flatMap((b) => checkBlockInvariants(b, { nowMs: Date.now() })),
    [],
  );
  const persisted = new Map<string, string>();
  for (const block of blocks) {
    for (const [ordinal, allocation] of Object.entries(block.spec.allocations)) {
      assert.equal(persisted.has(allocation.handle), false, `handle ${allocation.handle} twice`);
      persisted.set(allocation.handle, addressTextAt(mustParseCidr(block.spec.cidr), Number(ordinal)));
    }
  }
  assert.equal(new Set(persisted.values()).size, persisted.size, 'an address is held twice');
  assert.equal(new Set(model.values()).size, model.size, 'the allocator reported an address twice');
  assert.deepEqual(new Map([...persisted].sort()), new Map([...model].sort()));
}

/** Runs releaseEmptyBlocks over all nodes until `stop.now`; counts passes. */
async function releaseLoop(
  snapshot: PoolSnapshot,
  stats: AllocatorStats,
  stop: { now: boolean; passes: number; released: number },
): Promise<void> {
  while (!stop.now) {
    const done = await releaseEmptyBlocks(ds, { settings: snapshot.settings }, { stats });
    stop.passes += 1;
    stop.released += done.released.length;
    await sleep(50);
  }
}

it('9 nodes × 50 parallel allocations with borrowing, node deletion and a concurrent empty-block release loop', async () => {
  const snapshot = await loadSnapshot(ds);
  const stats = newStats();
  const model: Model = new Map();
  const stop = { now: false, passes: 0, released: 0 };
  const loop = releaseLoop(snapshot, stats, stop);
  const ids = Array.from({ length: PER_NODE }, (_, i) => i);
  const t0 = Date.now();
  try {
    await Promise.all(NODES.map((node) => allocate(node, ids, snapshot, stats, model)));
    await verify(model);
    assert.equal(model.size, NODES.length * PER_NODE);
    assert.ok(
      stats.borrows >= PER_NODE,
      `9 nodes share 8 blocks (maxBlocksPerNode 1): ≥ ${PER_NODE} borrowed, got ${stats.borrows}`,
    );
    const phase1 = { ...stats, ms: Date.now() - t0 };

    const [deletedA, deletedB, churner] = [NODES[0]!, NODES[1]!, NODES[8]!];
    const deleteNode = async (node: string): Promise<void> => {
      const mine = [...model.keys()].filter((h) => h.includes(`.${node}-`));
      await Promise.all(mine.map((h) => releaseByHandle(ds, h, { node }, { stats })));
      for (const h of mine) model.delete(h);
      await releaseNodeBlocks(ds, node, { stats });
    };
    const churn = async (): Promise<void> => {
      const mine = [...model.keys()].filter((h) => h.includes(`.${churner}-`));
      await Promise.all(mine.map((h) => releaseByHandle(ds, h, { node: churner }, { stats })));
      for (const h of mine) model.delete(h);
      await allocate(
        churner,
        ids.map((i) => i + 1000),
        snapshot,
        stats,
        model,
      );
    };
    await Promise.all([deleteNode(deletedA), deleteNode(deletedB), churn()]);
    stop.now = true;
    await loop;
    await verify(model);
    console.log(`phase 1 (450 allocations): ${JSON.stringify(phase1)}`);
    console.log(
      `total: ${JSON.stringify(stats)}; release loop passes ${stop.passes}, blocks released by it ${stop.released}; API requests ${ds.transport.stats.requests}; ${Date.now() - t0} ms`,
    );
  } finally {
    stop.now = true;
    await loop;
  }
});
