/**
 * Cost curve: `ipamctl check` vs allocations (issue 13 item 4; goal: linear, 100k allocations in
 * ≤ 15 s). A healthy cluster grows to each size — full /26 blocks of PER_BLOCK allocations over
 * 50 nodes, one live pod per allocation with its IP set through the status subresource (what
 * check-bench.ts seeds, at more sizes) — and the real executable (`node cli/main.ts check
 * --quiet`, process start included) runs RUNS times per size; every run must exit 0.
 */
import { spawnSync } from 'node:child_process';
import { addressTextAt, parseCidr } from 'blockipam/core';
import type { Pod } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { blockObject, createNamespace, createNode, poolObject, setPodIP } from '../../cli/cluster.ts';
import type { SeedAllocation } from '../../cli/cluster.ts';
import { bounded, load1, percentile, progress } from './common.ts';
import type { CurvePoint } from './common.ts';

/** Allocations per block: 50 of a /26's 62 usable ordinals (2–63), as a busy node's blocks. */
const PER_BLOCK = 50;
const NODES = 50;
const RUNS = 3;

/** Block `b` of pool 10.128.0.0/14 (4,096 /26 blocks: 204,800 allocations at most). */
const blockCidr = (b: number): string =>
  `10.${128 + Math.floor(b / 1024)}.${Math.floor((b % 1024) / 4)}.${(b % 4) * 64}/26`;

/**
 * Seeds one full block for a check benchmark: `perBlock` live pods on `node` (ordinals 2…, their
 * IPs set through the status subresource) and the block holding their allocations.
 * Shared by this curve and test/bench/check-bench.ts.
 */
export async function seedCheckBlock(
  ds: KubeDatastore,
  block: { ns: string; pool: string; cidr: string; node: string; key: number; perBlock: number },
): Promise<void> {
  const cidr = parseCidr(block.cidr);
  if (!cidr) throw new Error(`bad CIDR ${block.cidr}`);
  const allocations: SeedAllocation[] = [];
  for (let i = 0; i < block.perBlock; i++) {
    const ordinal = i + 2;
    const name = `p-${block.key}-${i}`;
    const pod = await ds.transport.request<Pod>('POST', `/api/v1/namespaces/${block.ns}/pods`, {
      body: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name },
        spec: { nodeName: block.node, containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
      },
    });
    await setPodIP(ds, pod, addressTextAt(cidr, ordinal));
    allocations.push({
      ordinal,
      handle: `k8s-pod-network.c${block.key}x${i}.eth0`,
      node: block.node,
      namespace: block.ns,
      pod: name,
      podUID: pod.metadata.uid ?? '',
    });
  }
  await ds.blocks.create(
    blockObject({ cidr: block.cidr, pool: block.pool, affinity: block.node, allocations }),
  );
}

/**
 * One `ipamctl check` run of the repository at `root`; @returns seconds.
 * Shared by this curve and test/bench/check-bench.ts. @throws Error when it does not exit 0
 */
export function runCheck(root: string, kubeconfig: string): number {
  const t0 = performance.now();
  const out = spawnSync(process.execPath, ['cli/main.ts', 'check', '--quiet', '--kubeconfig', kubeconfig], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  const seconds = (performance.now() - t0) / 1000;
  if (out.status !== 0)
    throw new Error(`check exited ${out.status}: ${out.stderr}${out.stdout.slice(-2000)}`);
  return seconds;
}

/** The curve at `sizes` (allocations, ascending, multiples of PER_BLOCK), in namespace `ns`. */
export async function checkCurve(
  ds: KubeDatastore,
  options: { root: string; kubeconfig: string; ns: string; sizes: readonly number[] },
): Promise<CurvePoint[]> {
  await ds.pools.create(poolObject('curve-check', '10.128.0.0/14'));
  await bounded(
    Array.from({ length: NODES }, (_, i) => `curve-node-${i}`),
    (name) => createNode(ds, name),
  );
  await createNamespace(ds, options.ns);
  const points: CurvePoint[] = [];
  let blocks = 0;
  for (const size of options.sizes) {
    const t0 = performance.now();
    const target = Math.ceil(size / PER_BLOCK);
    await bounded(
      Array.from({ length: target - blocks }, (_, k) => blocks + k),
      async (b) => {
        await seedCheckBlock(ds, {
          ns: options.ns,
          pool: 'curve-check',
          cidr: blockCidr(b),
          node: `curve-node-${b % NODES}`,
          key: b,
          perBlock: PER_BLOCK,
        });
        if (b % 100 === 99) progress(`check curve: ${b + 1}/${target} blocks seeded`);
      },
    );
    blocks = target;
    const seedSeconds = (performance.now() - t0) / 1000;
    const loadStart = load1();
    const times = Array.from({ length: RUNS }, () => runCheck(options.root, options.kubeconfig));
    points.push({
      x: blocks * PER_BLOCK,
      figures: {
        blocks,
        pods: blocks * PER_BLOCK,
        'median s': percentile(times, 50),
        'min s': Math.min(...times),
        'max s': Math.max(...times),
        'µs per allocation (median)': Math.round((percentile(times, 50) / (blocks * PER_BLOCK)) * 1e6),
        'seeding s (not timed)': Math.round(seedSeconds),
      },
      loadStart,
      loadEnd: load1(),
    });
    progress(`check curve: ${size} allocations: ${JSON.stringify(points.at(-1)?.figures)}`);
  }
  return points;
}
