/**
 * The controller GC scenario of the cost curves (test/bench/cost-curves/main.ts `--only gc`): NODES nodes, each with one /26 block holding PER_NODE allocations
 * whose pods do not exist, on a real kube-apiserver. The controller runs in-process on its real
 * watches (shared/informer.ts) with an injected clock: one pass sees the leaks (candidates), the
 * clock jumps over the grace period, the next pass reclaims — its wall time and API requests are
 * the figures. Scenario A: pods gone, nodes alive (grace, fresh re-check per pod). Scenario B:
 * the nodes deleted too (the deleted-node path: no grace, then their blocks released).
 *
 * Scenario B deletes the nodes by their label alone: the test helper `cleanCluster` would first
 * delete every blockipam object (IPAMBlocks, IPPools, IPAMConfig), the seeded blocks included.
 */
import { IPAM_CONFIG_NAME, settingsOf } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { connectKube, createLogger } from '../../block-controller/shared/index.ts';
import { Reconciler } from '../../block-controller/controller/reconciler.ts';
import { watchCluster } from '../../block-controller/controller/watched-view.ts';
import { controlPlane } from '../helpers/control-plane.ts';
import { adminDatastore, blockObject, cleanCluster, createNode, poolObject } from '../cli/cluster.ts';
import { TestClock } from '../controller/helpers.ts';
import { countDelta, progress } from './cost-curves/common.ts';

/** The scenario's size. Calico's (calico PR #8136): 250 nodes × 12 = 3,000 leaked allocations. */
export interface ControllerBenchSize {
  readonly nodes: number;
  /** Allocations per node's block (≤ 62: ordinals 2.. of a /26). */
  readonly perNode: number;
}

async function seed(
  ds: KubeDatastore,
  { nodes: NODES, perNode: PER_NODE }: ControllerBenchSize,
): Promise<void> {
  await ds.pools.create(poolObject('bench', '10.90.0.0/16'));
  await ds.configs.create({ metadata: { name: IPAM_CONFIG_NAME }, spec: {} }); // defaults: 900 s grace
  const jobs: Promise<unknown>[] = [];
  for (let n = 0; n < NODES; n++) {
    const node = `bench-${n}`;
    const allocations = Array.from({ length: PER_NODE }, (_, i) => ({
      ordinal: 2 + i,
      handle: `k8s-pod-network.${n}-${i}.eth0`,
      node,
      namespace: 'default',
      pod: `gone-${n}-${i}`,
      podUID: `uid-${n}-${i}`,
    }));
    jobs.push(
      createNode(ds, node).then(() =>
        ds.blocks.create(
          blockObject({ cidr: `10.90.${n}.0/26`, pool: 'bench', affinity: node, allocations }),
        ),
      ),
    );
    if (jobs.length >= 16) await Promise.all(jobs.splice(0));
  }
  await Promise.all(jobs);
}

async function allocatedCount(ds: KubeDatastore): Promise<number> {
  return (await ds.blocks.list()).reduce((n, b) => n + Object.keys(b.spec.allocations).length, 0);
}

/** What one scenario run measured. Requests are the controller's own, by HTTP method. */
export interface ControllerBenchResult {
  readonly scenario: string;
  readonly candidatesAfterFirstPass: number | undefined;
  readonly firstPassReleased: number | undefined;
  readonly firstPassMs: number;
  readonly firstPassRequests: Record<string, number>;
  readonly reclaimPassMs: number;
  readonly released: number;
  readonly nodesReleased: number;
  readonly reclaimPassRequests: Record<string, number>;
  readonly allocationsLeft: number;
  readonly blocksLeft: number;
  readonly seedMs: number;
}

/**
 * Seeds, runs the two passes, removes everything it seeded.
 * @param deleteNodes scenario B: the nodes are deleted after seeding (before the watches start)
 */
export async function scenario(
  name: string,
  deleteNodes: boolean,
  size: ControllerBenchSize = { nodes: 250, perNode: 12 },
): Promise<ControllerBenchResult> {
  const NODES = size.nodes;
  const admin = adminDatastore();
  await cleanCluster(admin);
  const t0 = performance.now();
  await seed(admin, size);
  const seedMs = Math.round(performance.now() - t0);
  progress(`${name}: seeded in ${seedMs} ms`);
  const connection = connectKube({ kubeconfig: controlPlane().adminKubeconfig });
  const log = createLogger({ component: 'controller', level: 'warn' });
  if (deleteNodes) {
    await admin.transport.request('DELETE', '/api/v1/nodes', { query: { labelSelector: 'ipamctl-test=1' } });
    progress(`${name}: nodes deleted; ${(await admin.blocks.list()).length} blocks`);
  }
  const view = await watchCluster({ connection, log, onChange: () => undefined });
  while (
    view.blocks().length < NODES ||
    view.notReady() ||
    (deleteNodes && view.nodeNames().some((n) => n.startsWith('bench-')))
  )
    await new Promise((resolve) => setTimeout(resolve, 100));
  progress(`${name}: watches synced`);
  const clock = new TestClock();
  const reconciler = new Reconciler({ ds: connection.datastore, view, log, clock: clock.now });
  const stats = connection.transport.stats;
  const before1 = { ...stats.byMethod };
  const started1 = performance.now();
  const first = await reconciler.pass();
  const firstMs = performance.now() - started1;
  const firstRequests = countDelta(before1, stats.byMethod);
  clock.advance(settingsOf(view.config()).leakGracePeriodSeconds);
  const before = { ...stats.byMethod };
  const started = performance.now();
  const pass = await reconciler.pass();
  const ms = performance.now() - started;
  const requests = countDelta(before, stats.byMethod);
  const left = await allocatedCount(admin);
  const blocksLeft = (await admin.blocks.list()).length;
  await view.stop();
  connection.close();
  await cleanCluster(admin);
  admin.close();
  return {
    scenario: name,
    candidatesAfterFirstPass: first.leaks?.scan.candidates.length,
    firstPassReleased: first.leaks?.reclaim.released.length,
    firstPassMs: Math.round(firstMs),
    firstPassRequests: firstRequests,
    reclaimPassMs: Math.round(ms),
    released: (first.leaks?.reclaim.released.length ?? 0) + (pass.leaks?.reclaim.released.length ?? 0),
    nodesReleased: (first.nodes?.nodes.length ?? 0) + (pass.nodes?.nodes.length ?? 0),
    reclaimPassRequests: requests,
    allocationsLeft: left,
    blocksLeft,
    seedMs,
  };
}
