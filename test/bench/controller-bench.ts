/**
 * Controller benchmark (a script, not a test; issue 10): 3,000 leaked allocations over 250 nodes
 * reclaimed on a real kube-apiserver, Calico's GC scenario (calico PR #8136: ~50 min for 3k pods
 * on 250 nodes, grace period included). The controller runs in-process on its real watches
 * (shared/informer.ts) with an injected clock: one pass sees the leaks (candidates), the clock
 * jumps over the grace period, the next pass reclaims — its wall time and API requests are the
 * figures. Scenario A: pods gone, nodes alive (grace, fresh re-check per pod). Scenario B (the
 * 250 nodes deleted too: no grace, then their blocks released) is `--only-b`; its run on
 * 2026-12-01 found the seeded blocks gone before the first pass (not understood yet: no
 * figures from it).
 *
 * Usage: node_modules/.bin/node test/bench/controller-bench.ts [--only-b]
 */
import { IPAM_CONFIG_NAME, settingsOf } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { connectKube, createLogger } from '../../block-controller/shared/index.ts';
import { Reconciler } from '../../block-controller/controller/reconciler.ts';
import { watchCluster } from '../../block-controller/controller/watched-view.ts';
import { controlPlane } from '../helpers/control-plane.ts';
import { adminDatastore, blockObject, cleanCluster, createNode, poolObject } from '../cli/cluster.ts';
import { TestClock } from '../controller/helpers.ts';

const NODES = 250;
const PER_NODE = 12; // 3,000 allocations

async function seed(ds: KubeDatastore): Promise<void> {
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

async function scenario(name: string, deleteNodes: boolean): Promise<Record<string, unknown>> {
  const admin = adminDatastore();
  await cleanCluster(admin);
  const t0 = performance.now();
  await seed(admin);
  progress(`${name}: seeded in ${Math.round(performance.now() - t0)} ms`);
  if (deleteNodes)
    await cleanCluster(admin, [])
      .then(() => undefined)
      .catch(() => undefined);
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
  const firstRequests = diff(before1, stats.byMethod);
  clock.advance(settingsOf(view.config()).leakGracePeriodSeconds);
  const before = { ...stats.byMethod };
  const started = performance.now();
  const pass = await reconciler.pass();
  const ms = performance.now() - started;
  const requests = diff(before, stats.byMethod);
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
  };
}

function progress(text: string): void {
  process.stderr.write(`${new Date().toISOString()} ${text}\n`);
}

function diff(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [method, n] of Object.entries(after))
    if (n !== (before[method] ?? 0)) out[method] = n - (before[method] ?? 0);
  return out;
}

if (!process.argv.includes('--only-b'))
  console.log(JSON.stringify(await scenario('A: 3,000 pods gone, 250 nodes alive', false)));
if (process.argv.includes('--only-b'))
  console.log(JSON.stringify(await scenario('B: 3,000 pods and their 250 nodes gone', true)));
