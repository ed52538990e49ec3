/**
 * Cost curve: claiming a block vs the number of blocks in the pool (issue 13 item 4).
 *
 * Real API server: pool 10.64.0.0/14 of /26 blocks (4 regions of 1,024 blocks, docs/design-core.md
 * §2), seeded to each size with empty blocks spread evenly over the pool (so each region holds
 * size / 4), then CLAIMS allocations for new nodes, one at a time, each claiming a block (the
 * snapshot is given, as the plugin passes it). Memory store: the same search over pool 10.0.0.0/8
 * (256 regions) at larger sizes — the allocator's own CPU, no network.
 */
import {
  autoAssign,
  blockCidrFor,
  loadSnapshot,
  MemoryDatastore,
  mustParseCidr,
  newBlock,
} from 'blockipam/core';
import type { Datastore, IPAMBlock } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { bounded, countDelta, load1, percentile, progress, requestText } from './common.ts';
import type { CurvePoint } from './common.ts';

/** Measured claims per size: enough for a stable median, few enough to leave the size as seeded. */
const CLAIMS = 20;

/** Block `i` of a pool of 2^bits blocks, spread: a stride coprime with the count visits each once. */
function spreadBlock(pool: string, poolName: string, bits: number, i: number): IPAMBlock {
  const cidr = mustParseCidr(pool);
  const count = 1 << bits;
  const index = BigInt((i * 7919) % count); // 7919 is an odd prime: coprime with 2^bits
  return newBlock({
    cidr: blockCidrFor({ family: 4, value: cidr.base + (index << 6n) }, 26),
    pool: poolName,
    node: `seed-${i % 100}`,
    nowMs: Date.now(),
  });
}

/** Claims CLAIMS blocks for new nodes; @returns per-claim ms and requests (when counted). */
async function claims(
  ds: Datastore,
  tag: string,
  count: () => Readonly<Record<string, number>>,
): Promise<{ ms: number[]; requests: Record<string, number> }> {
  const snapshot = await loadSnapshot(ds);
  const before = { ...count() };
  const ms: number[] = [];
  for (let j = 0; j < CLAIMS; j++) {
    const node = `claim-${tag}-${j}`;
    const t0 = performance.now();
    const out = await autoAssign(ds, {
      handle: `k8s-pod-network.${node}.eth0`,
      node,
      pod: { namespace: 'bench', name: node, uid: `uid-${node}` },
      nodeLabels: {},
      namespaceLabels: {},
      snapshot,
    });
    ms.push(performance.now() - t0);
    if (!out.ok) throw new Error(`claim for ${node}: ${out.message}`);
  }
  return { ms, requests: countDelta(before, count()) };
}

/** The API-server curve at `sizes` (ascending): seeds up to each size, then claims. */
export async function claimCurveApi(ds: KubeDatastore, sizes: readonly number[]): Promise<CurvePoint[]> {
  await ds.pools.create({ metadata: { name: 'curve' }, spec: { cidr: '10.64.0.0/14', blockSize: 26 } });
  const points: CurvePoint[] = [];
  let next = 0; // the next spread index to try
  for (const size of sizes) {
    const t0 = performance.now();
    // The measured claims' own blocks count towards the size; the seeding skips their CIDRs.
    const taken = new Set((await ds.blocks.listMetadata()).map((m) => m.name));
    const more: IPAMBlock[] = [];
    while (taken.size + more.length < size) {
      const block = spreadBlock('10.64.0.0/14', 'curve', 12, next++);
      if (!taken.has(block.metadata.name)) more.push(block);
    }
    await bounded(more, async (block) => {
      await ds.blocks.create(block);
    });
    progress(`claim curve: ${size} blocks seeded (${Math.round(performance.now() - t0)} ms)`);
    const loadStart = load1();
    const { ms, requests } = await claims(ds, String(size), () => ds.transport.stats.byMethod);
    points.push({
      x: size,
      figures: {
        'blocks per region': size / 4,
        'p50 ms': percentile(ms, 50),
        'p90 ms': percentile(ms, 90),
        'requests per claim': requestText(requests, CLAIMS),
      },
      loadStart,
      loadEnd: load1(),
    });
  }
  return points;
}

/** The memory-store curve at `sizes`: a fresh store per size, pool /8 (256 regions). */
export async function claimCurveMemory(sizes: readonly number[]): Promise<CurvePoint[]> {
  const points: CurvePoint[] = [];
  for (const size of sizes) {
    const blocks = Array.from({ length: size }, (_, i) => spreadBlock('10.0.0.0/8', 'big', 18, i));
    const ds = new MemoryDatastore({
      pools: [{ metadata: { name: 'big' }, spec: { cidr: '10.0.0.0/8', blockSize: 26 } }],
      blocks,
    });
    const loadStart = load1();
    const { ms, requests } = await claims(ds, `m${size}`, () => ({ reads: ds.stats.reads }));
    points.push({
      x: size,
      figures: {
        'blocks per region': Math.round(size / 256),
        'p50 ms': percentile(ms, 50),
        'p90 ms': percentile(ms, 90),
        'reads per claim': (requests.reads ?? 0) / CLAIMS,
      },
      loadStart,
      loadEnd: load1(),
    });
  }
  return points;
}
