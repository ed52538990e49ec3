/**
 * Cost curve: a warm allocation vs the blocks its node holds (issue 13 item 4). The node holds
 * K blocks: K − 1 full (62 allocations each) and one with room; each allocation is core's
 * `autoAssign` as the plugin's direct path calls it (snapshot and labels given): the
 * LIST of the node's blocks — K full objects — then the UPDATE of the block with room. In-process
 * (no executable start), one at a time; the address is released again after each (untimed), so
 * every allocation sees the same K blocks.
 */
import { autoAssign, loadSnapshot, releaseByHandle } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { blockObject } from '../../cli/cluster.ts';
import { bounded, countDelta, load1, percentile, progress, requestText } from './common.ts';
import type { CurvePoint } from './common.ts';

const ADDS = 20;
/** Usable ordinals of a /26: 2–63 (0 is the network, 1 the gateway). */
const FULL = 62;

export async function warmAddCurve(ds: KubeDatastore, sizes: readonly number[]): Promise<CurvePoint[]> {
  await ds.pools.create({ metadata: { name: 'warm' }, spec: { cidr: '10.70.0.0/16', blockSize: 26 } });
  const points: CurvePoint[] = [];
  let next = 0;
  for (const [n, k] of sizes.entries()) {
    const node = `warm-node-${n}`;
    const full = Array.from({ length: k - 1 }, () => next++);
    await bounded(full, async (b) => {
      const allocations = Array.from({ length: FULL }, (_, i) => ({
        ordinal: 2 + i,
        handle: `k8s-pod-network.w${b}x${i}.eth0`,
        node,
        namespace: 'default',
        pod: `p-${b}-${i}`,
        podUID: `uid-${b}-${i}`,
      }));
      const cidr = `10.70.${Math.floor(b / 4)}.${(b % 4) * 64}/26`;
      await ds.blocks.create(blockObject({ cidr, pool: 'warm', affinity: node, allocations }));
    });
    const room = next++;
    await ds.blocks.create(
      blockObject({
        cidr: `10.70.${Math.floor(room / 4)}.${(room % 4) * 64}/26`,
        pool: 'warm',
        affinity: node,
        allocations: [],
      }),
    );
    const snapshot = await loadSnapshot(ds);
    const loadStart = load1();
    const ms: number[] = [];
    let counted: Record<string, number> = {};
    for (let j = 0; j < ADDS; j++) {
      const handle = `k8s-pod-network.warm-${n}-${j}.eth0`;
      const before = { ...ds.transport.stats.byMethod };
      const t0 = performance.now();
      const out = await autoAssign(ds, {
        handle,
        node,
        pod: { namespace: 'bench', name: `warm-${j}`, uid: `uid-warm-${j}` },
        nodeLabels: {},
        namespaceLabels: {},
        snapshot,
      });
      ms.push(performance.now() - t0);
      if (!out.ok) throw new Error(`warm ADD on ${node}: ${out.message}`);
      counted = countDelta(before, ds.transport.stats.byMethod);
      await releaseByHandle(ds, handle, { node });
    }
    points.push({
      x: k,
      figures: {
        'p50 ms': percentile(ms, 50),
        'p90 ms': percentile(ms, 90),
        'requests per ADD': requestText(counted),
      },
      loadStart,
      loadEnd: load1(),
    });
    progress(`warm-add curve: ${k} blocks: ${JSON.stringify(points.at(-1)?.figures)}`);
  }
  return points;
}
