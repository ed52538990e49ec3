// Concurrency on the REAL API server, with an empty-block release loop running throughout:
// 1. 9 simulated nodes × 50 parallel allocations each (450 at once) in a pool of 8 blocks with
//    maxBlocksPerNode 1, so at least one node must borrow;
// 2. two nodes are "deleted" (blocks made unowned, pods released) while the borrowing node churns;
// 3. with emptyBlockReleaseSeconds 0, a burst node empties blocks, the loop deletes them, and new
//    allocations race with the loop.
// After each phase: every address unique, every reported allocation persisted (and nothing
// else), every block invariant true. Conflicts, retries, claims and borrows are printed.
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  addressTextAt,
  blockCidrFor,
  formatCidr,
  parseIP,
  autoAssign,
  checkBlockInvariants,
  loadSnapshot,
  mustParseCidr,
  newStats,
  releaseByHandle,
  releaseNodeBlocks,
} from 'blockipam/core';
import type { AllocatorStats, PoolSnapshot } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { adminDatastore, wipeBlockipam } from '../helpers/crds.ts';
import { releaseIdleBlocks } from './fixtures.ts';

const NODES = Array.from({ length: 9 }, (_, i) => `sim-node-${i}`);
const PER_NODE = 50;
let ds: KubeDatastore;

before(async () => {
  ds = adminDatastore();
  await wipeBlockipam(ds);
  await ds.configs.create({
    metadata: { name: 'default' },
    // 1 h until phase 3: with every node at maxBlocksPerNode 1, a CIDR freed by the loop in the
    // middle of the claim storm could be stranded (docs/design-core.md §6) and starve the tight pool.
    spec: { maxBlocksPerNode: 1, emptyBlockReleaseSeconds: 3600 },
  });
  await ds.pools.create({ metadata: { name: 'concurrency' }, spec: { cidr: '10.60.0.0/23', blockSize: 26 } });
});
after(async () => {
  await wipeBlockipam(ds);
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
  pools?: string[],
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
          ...(pools ? { pools } : {}),
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

/** Runs the agents' and the controller's idle-block release over all nodes until `stop.now`; counts passes. */
async function releaseLoop(
  stats: AllocatorStats,
  stop: { now: boolean; passes: number; released: number },
): Promise<void> {
  while (!stop.now) {
    const done = await releaseIdleBlocks(ds, Date.now(), { stats }); // reads IPAMConfig each pass
    stop.passes += 1;
    stop.released += done.length;
    await sleep(100);
  }
}

it('9 nodes × 50 parallel allocations with borrowing, node deletion and a concurrent empty-block release loop', async () => {
  const snapshot = await loadSnapshot(ds);
  const stats = newStats();
  const model: Model = new Map();
  const stop = { now: false, passes: 0, released: 0 };
  const loop = releaseLoop(stats, stop);
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
    // Node deletion as the controller does it: the nodes' blocks become unowned first (their
    // allocations stay, borrowable), then the pods go; the emptied blocks are deleted (by the
    // release path or by the loop) while the churning node borrows into them.
    await releaseNodeBlocks(ds, deletedA, { stats });
    await releaseNodeBlocks(ds, deletedB, { stats });
    const deletePods = async (node: string): Promise<void> => {
      const mine = [...model.keys()].filter((h) => h.includes(`.${node}-`));
      await Promise.all(mine.map((h) => releaseByHandle(ds, h, { node }, { stats })));
      for (const h of mine) model.delete(h);
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
    await Promise.all([deletePods(deletedA), deletePods(deletedB), churn()]);
    await verify(model);

    // Phase 3: the release loop against allocations. A burst node in a pool of /28 blocks (13
    // pods each) fills ≥ 4 blocks with 52 parallel allocations, then empties all but one; once
    // the loop has deleted an emptied block, as many new allocations race with it (a delete
    // loses to a write, a write to a deleted block moves on).
    await ds.configs.update({
      ...(await ds.configs.get('default'))!,
      spec: { maxBlocksPerNode: 4, emptyBlockReleaseSeconds: 0 },
    });
    await ds.pools.create({
      metadata: { name: 'concurrency-b' },
      spec: { cidr: '10.61.0.0/24', blockSize: 28 },
    });
    const burst = 'sim-node-burst';
    const snapshotB = await loadSnapshot(ds);
    await allocate(burst, ids.slice(0, 52), snapshotB, stats, model, ['concurrency-b']);
    const byBlock = new Map<string, string[]>();
    for (const [h, address] of model) {
      if (!h.includes(`.${burst}-`)) continue;
      const block = formatCidr(blockCidrFor(parseIP(address)!, 28));
      byBlock.set(block, [...(byBlock.get(block) ?? []), h]);
    }
    // Concurrent claims may take more than 4 blocks (the limit is checked against a LIST, see
    // docs/design-core.md §6); keep the fullest block, empty all the others.
    assert.ok(byBlock.size >= 4, `the burst filled ${byBlock.size} blocks`);
    const groups = [...byBlock.values()].sort((a, b) => b.length - a.length);
    const burstHandles = groups.slice(1).flat();
    console.log(
      `phase 3: the burst node's 52 parallel allocations took ${byBlock.size} blocks (maxBlocksPerNode 4)`,
    );
    // counted from before the releases: the loop may delete an emptied block while they run, and
    // then no second one (it keeps the pool at minFreeAddressesPerNode)
    const releasedBefore = stop.released;
    await Promise.all(burstHandles.map((h) => releaseByHandle(ds, h, { node: burst }, { stats })));
    for (const h of burstHandles) model.delete(h);
    for (let waited = 0; stop.released === releasedBefore && waited < 100; waited++) await sleep(100);
    assert.ok(stop.released > releasedBefore, 'the loop deleted an emptied block of the burst node');
    await allocate(
      burst,
      burstHandles.map((_, i) => i + 2000),
      snapshotB,
      stats,
      model,
      ['concurrency-b'],
    );
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
