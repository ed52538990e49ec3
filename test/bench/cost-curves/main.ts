/**
 * Cost curves (issue 13 item 4; a script, not a test): how each cost grows with the work,
 * measured at 3+ sizes on the local control plane (kube-apiserver + etcd on loopback, the run's
 * CP_* one or a private one), each drawn to docs/benchmarks/NAME.svg and written to its
 * `### …` subsection of `## Cost curves` in docs/benchmarks.md.
 *
 *   node_modules/.bin/node test/bench/cost-curves/main.ts [--only claim,add,check,gc,agent]
 *
 * Objects are seeded directly through core's KubeDatastore (16 writes in flight); every curve
 * removes what it seeded.
 */
import { parseArgs } from 'node:util';
import { adminDatastore, cleanCluster } from '../../cli/cluster.ts';
import { controlPlane } from '../../helpers/control-plane.ts';
import { fileURLToPath } from 'node:url';
import { KubeDatastore, KubeTransport } from 'blockipam/core/kube';
import { loadKubeconfig } from 'blockipam/core/kubeconfig';
import { uniqueNamespace } from '../../cli/cluster.ts';
import { agentCurve, RUNTIME_SERIES } from './agent.ts';
import { checkCurve } from './check.ts';
import { claimCurveApi, claimCurveMemory } from './claim.ts';
import { warmAddCurve } from './warm-add.ts';
import { scenario } from '../controller-bench-lib.ts';
import { load1, progress, requestText } from './common.ts';
import type { CurvePoint } from './common.ts';
import { publishCurve } from './report.ts';

const CURVES = ['claim', 'add', 'gc', 'check', 'agent'] as const;
type Curve = (typeof CURVES)[number];

const { values } = parseArgs({
  options: {
    only: { type: 'string', default: CURVES.join(',') },
    // Allocations per size of the check curve (seeding 100k pods takes ~10 min on a quiet machine).
    'check-sizes': { type: 'string', default: '1000,10000,100000' },
  },
});
const chosen = (values.only ?? '').split(',').filter((c) => c !== '');
for (const c of chosen)
  if (!(CURVES as readonly string[]).includes(c))
    throw new RangeError(`--only: unknown curve "${c}" (known: ${CURVES.join(', ')})`);

const COMMAND = 'node_modules/.bin/node test/bench/cost-curves/main.ts';

/** --check-sizes: allocations per size, ascending multiples of 50. @throws RangeError otherwise */
function checkSizes(): number[] {
  const sizes = (values['check-sizes'] ?? '').split(',').map(Number);
  if (
    sizes.some(
      (n, i) => !Number.isInteger(n) || n < 50 || n % 50 !== 0 || (i > 0 && n <= (sizes[i - 1] ?? 0)),
    )
  )
    throw new RangeError(`--check-sizes: ascending multiples of 50, e.g. 1000,10000,100000`);
  return sizes;
}

async function claim(): Promise<void> {
  const cp = controlPlane();
  const ds = adminDatastore();
  await cleanCluster(ds);
  const loadAtStart = load1();
  try {
    const api = await claimCurveApi(ds, [100, 1000, 3000]);
    const memory = await claimCurveMemory([1000, 10_000, 50_000]);
    const [small, , big] = api;
    await publishCurve({
      chart: 'cost-claim-search',
      title: 'Claim search vs blocks in the pool',
      x: { title: 'blocks in the pool', scale: 'log' },
      y: { title: 'ms per allocation that claims a block (p50)' },
      series: [
        { name: 'API server, pool /14 (4 regions)', points: api, y: 'p50 ms' },
        { name: 'memory store, pool /8 (256 regions)', points: memory, y: 'p50 ms' },
      ],
      command: `${COMMAND} --only claim`,
      versions: `kube-apiserver ${cp.serverVersion} + etcd on loopback`,
      methodShort: '20 claims per size, one at a time, snapshot given',
      method:
        'Each size: the pool is seeded with that many empty /26 blocks spread evenly over it, then 20 allocations for new nodes run one after another, each claiming a block (`autoAssign` with the snapshot given, as the plugin passes it): the LIST of the node’s blocks (empty), the metadata LIST of the region the node’s offset falls in, the CREATE, the allocation’s UPDATE. API server: pool 10.64.0.0/14 (4 regions of 1,024 blocks), requests counted by the transport. Memory store: pool 10.0.0.0/8 (256 regions), the allocator’s own CPU and the store’s copies.',
      verdict:
        small && big
          ? `API server: ${big.x / small.x}× the blocks, ${(Number(big.figures['p50 ms']) / Number(small.figures['p50 ms'])).toFixed(1)}× the time per claim (p50) with the same ${big.figures['requests per claim']} per claim: the region's metadata LIST is the part that grows (it returns ${small.figures['blocks per region']} → ${big.figures['blocks per region']} blocks); no request is added by the pool's size. Latencies at a load average above 2 per core are mostly waiting for a CPU.`
          : '',
      loadAtStart,
    });
  } finally {
    await cleanCluster(ds);
    ds.close();
  }
}

/** Leaked allocations per node's block in the GC curve: Calico's scenario has 12 (3,000 / 250). */
const LEAKS_PER_NODE = 12;

async function gc(): Promise<void> {
  const cp = controlPlane();
  const loadAtStart = load1();
  const points: CurvePoint[] = [];
  const deleted: CurvePoint[] = [];
  for (const nodes of [25, 84, 250]) {
    for (const deleteNodes of [false, true]) {
      const loadStart = load1();
      const leaks = nodes * LEAKS_PER_NODE;
      const r = await scenario(
        deleteNodes ? `B: ${leaks} leaks, nodes deleted` : `A: ${leaks} leaks`,
        deleteNodes,
        { nodes, perNode: LEAKS_PER_NODE },
      );
      progress(JSON.stringify(r));
      const requests = Object.values(r.reclaimPassRequests).reduce((a, b) => a + b, 0);
      const firstRequests = Object.values(r.firstPassRequests).reduce((a, b) => a + b, 0);
      (deleteNodes ? deleted : points).push({
        x: leaks,
        figures: {
          nodes,
          'released (both passes)': r.released,
          'first pass ms': r.firstPassMs,
          'first pass requests': requestText(r.firstPassRequests),
          'reclaim pass s': r.reclaimPassMs / 1000,
          'reclaim pass requests': requestText(r.reclaimPassRequests),
          'requests per leak (both passes)': Math.round(((requests + firstRequests) / leaks) * 100) / 100,
          'left after': `${r.allocationsLeft} allocations, ${r.blocksLeft} blocks`,
          's, both passes': (r.firstPassMs + r.reclaimPassMs) / 1000,
        },
        loadStart,
        loadEnd: load1(),
      });
    }
  }
  const big = points.at(-1);
  const bigB = deleted.at(-1);
  await publishCurve({
    chart: 'cost-controller-gc',
    title: 'Controller GC vs leaked allocations',
    x: { title: 'leaked allocations' },
    y: { title: 'wall time of both passes (s)' },
    series: [
      { name: 'A: pods gone, nodes alive (after the grace period)', points, y: 's, both passes' },
      { name: 'B: pods and their nodes gone (deleted-node path)', points: deleted, y: 's, both passes' },
    ],
    command: `${COMMAND} --only gc`,
    versions: `kube-apiserver ${cp.serverVersion} + etcd on loopback`,
    methodShort: '12 leaks per node, controller in-process on its real watches, injected clock',
    method: `Calico's GC scenario (calico PR #8136: ~50 min for 3,000 pods on 250 nodes) at three sizes, through \`test/bench/controller-bench-lib.ts\`: N/12 nodes, each with one /26 block holding 12 allocations whose pods do not exist. The controller's reconciler runs in-process on its real watches with an injected clock: the first pass finds the candidates (A) or releases the deleted nodes' allocations and blocks (B), the clock jumps over the ${'`leakGracePeriodSeconds`'} default (900 s), the second pass reclaims (A). Scenario B deletes the Node objects after seeding, before the watches start. Requests: the controller's transport counter, by method.`,
    verdict:
      big && bigB
        ? `At ${big.x} leaks: A took ${Number(big.figures['s, both passes']).toFixed(1)} s with ${big.figures['requests per leak (both passes)']} requests per leak (before core's batched release, which released per address: 103–111 s, 6,000 GET + 3,001 PUT); B took ${Number(bigB.figures['s, both passes']).toFixed(1)} s with ${bigB.figures['requests per leak (both passes)']} requests per leak. Left after: A ${big.figures['left after']}, B ${bigB.figures['left after']}.`
        : '',
    loadAtStart,
  });
}

const root = fileURLToPath(new URL('../../../', import.meta.url));

/**
 * The check curve seeds up to 100,000 pods; deleting them takes longer than the curve on 2
 * cores, so it wants a control plane of its own (a private one, stopped with this process) and
 * leaves the objects to its teardown. With a shared one (CP_* set) it deletes what it seeded.
 */
async function check(): Promise<void> {
  const cp = controlPlane();
  adminDatastore().close(); // installs the CRDs
  // 10 min per request: a DELETE collection of many pods takes minutes on 2 cores.
  const ds = new KubeDatastore(new KubeTransport(loadKubeconfig(cp.adminKubeconfig), { timeoutMs: 600_000 }));
  const ns = uniqueNamespace('check-curve');
  await cleanCluster(ds);
  const loadAtStart = load1();
  try {
    const points = await checkCurve(ds, {
      root,
      kubeconfig: cp.adminKubeconfig,
      ns,
      sizes: checkSizes(),
    });
    const first = points[0];
    const last = points.at(-1);
    const prev = points.at(-2);
    const median = (p: CurvePoint | undefined): number => Number(p?.figures['median s']);
    const marginalUs =
      last && prev && last !== first
        ? Math.round(((median(last) - median(prev)) / (last.x - prev.x)) * 1e6)
        : undefined;
    await publishCurve({
      chart: 'cost-ipamctl-check',
      title: 'ipamctl check vs allocations',
      x: { title: 'allocations (one live pod each)', scale: 'log' },
      y: { title: 'wall time of one check (s, median)', scale: 'log' },
      series: [{ name: 'ipamctl check, healthy cluster', points, y: 'median s' }],
      command: `${COMMAND} --only check --check-sizes ${values['check-sizes']}`,
      versions: `kube-apiserver ${cp.serverVersion} + etcd on loopback`,
      methodShort: '3 runs of the executable per size, process start included',
      method:
        'Each size: a healthy cluster grown to that many allocations — full /26 blocks of 50 allocations over 50 nodes, one live pod per allocation with its IP set through the status subresource, pool 10.128.0.0/14 — then the real executable `node cli/main.ts check --quiet` runs 3 times (process start and the @kubernetes/client-node import included; paginated LISTs — pods 2,000 per page, other kinds 500 — each next page asked for while the one before is decoded), each exiting 0. Seeding is not timed.',
      verdict:
        first && last
          ? `${last.x / first.x}× the allocations cost ${(Number(last.figures['median s']) / Number(first.figures['median s'])).toFixed(1)}× the time (${first.figures['µs per allocation (median)']} → ${last.figures['µs per allocation (median)']} µs per allocation, start-up amortised)` +
            (marginalUs !== undefined && prev
              ? `; from ${prev.x} to ${last.x} allocations each added one cost ${marginalUs} µs (median to median)`
              : '') +
            `. Goal: 100k allocations in ≤ 15 s — ${last.x >= 100_000 ? (Number(last.figures['median s']) <= 15 ? `met (${Number(last.figures['median s']).toFixed(1)} s)` : `not met (${Number(last.figures['median s']).toFixed(1)} s)`) : 'not measured at 100k'}. Where the time goes and what changed: docs/design-cli.md §Cost of check.`
          : '',
      loadAtStart,
    });
  } finally {
    if (process.env.CP_API_URL !== undefined) {
      await cleanCluster(ds);
      await ds.transport.request('DELETE', `/api/v1/namespaces/${ns}`).catch(() => undefined);
    }
    ds.close();
  }
}

async function agent(): Promise<void> {
  const cp = controlPlane();
  const ds = adminDatastore();
  await cleanCluster(ds);
  const loadAtStart = load1();
  try {
    const curves = await agentCurve(ds, {
      root,
      kubeconfig: cp.adminKubeconfig,
      sizes: [100, 300, 1000],
      runtimes: ['executable', 'node'],
    });
    const shipped = curves.get('executable') ?? [];
    const big = shipped.at(-1);
    const bigNode = curves.get('node')?.at(-1);
    await publishCurve({
      chart: 'cost-agent-memory',
      title: 'Node agent memory at idle vs cluster size',
      x: { title: 'nodes in the cluster (5 blocks each)' },
      y: { title: 'RSS at idle (MiB)' },
      series: [...curves].flatMap(([runtime, points]) => [
        { name: RUNTIME_SERIES[runtime], points, y: 'RSS MiB (idle)' },
        { name: `${RUNTIME_SERIES[runtime]}: peak RSS (VmHWM)`, points, y: 'peak RSS MiB', inTable: false },
      ]),
      command: `${COMMAND} --only agent`,
      versions: `kube-apiserver ${cp.serverVersion} + etcd on loopback`,
      methodShort: `one agent process, RSS from /proc after a settle time, CPU over 30 s idle`,
      method:
        "Each size: that many Node objects (with an InternalIP) and 5 /26 blocks per node, 10 allocations each, seeded straight through the datastore; then one real agent process for one of the nodes, run twice one after the other: the multi-call executable through its `blockipam-agent` link (what the image ships: Bun) and the source under Node 24 (`block-controller/agent/main.ts run`, as the tests run it) — each with its watches of nodes, blocks, pools, config, reservations and the node's pods; no routes, log level warn. Once its /readyz answers 200 (every watch synced), 15 s settle; RSS (VmRSS) and its peak (VmHWM) from /proc/PID/status; CPU: user + system ticks over the next 30 s idle window.",
      verdict: big
        ? `At ${big.x} nodes / ${big.figures.blocks} blocks, the shipped executable: RSS ${big.figures['RSS MiB (idle)']} MiB at idle (peak ${big.figures['peak RSS MiB']} MiB), ${big.figures['idle CPU (% of a core)']} % of a core at idle, ready after ${big.figures['ready s']} s` +
          (bigNode
            ? `; under Node: RSS ${bigNode.figures['RSS MiB (idle)']} MiB (peak ${bigNode.figures['peak RSS MiB']} MiB), ${bigNode.figures['idle CPU (% of a core)']} % of a core.`
            : '.')
        : '',
      loadAtStart,
    });
  } finally {
    await cleanCluster(ds);
    ds.close();
  }
}

async function add(): Promise<void> {
  const cp = controlPlane();
  const ds = adminDatastore();
  await cleanCluster(ds);
  const loadAtStart = load1();
  try {
    const points = await warmAddCurve(ds, [1, 5, 20]);
    const [one, , many] = points;
    await publishCurve({
      chart: 'cost-warm-add',
      title: 'Warm allocation vs blocks on the node',
      x: { title: 'blocks affine to the node (all full but one)' },
      y: { title: 'ms per warm allocation (p50)' },
      series: [
        {
          name: 'autoAssign on the direct path (LIST of the node’s blocks + UPDATE)',
          points,
          y: 'p50 ms',
        },
      ],
      command: `${COMMAND} --only add`,
      versions: `kube-apiserver ${cp.serverVersion} + etcd on loopback`,
      methodShort: '20 allocations per size, in-process, released after each (untimed)',
      method:
        'Each size K: a new node holds K /26 blocks, K − 1 full (62 allocations each) and one empty; 20 allocations run one at a time, each released again untimed (so each sees the same blocks). Each is core’s `autoAssign` as the plugin’s direct path calls it (snapshot and labels given), in-process — no executable start: the LIST of the node’s blocks returns K whole objects, then the UPDATE of the block with room.',
      verdict:
        one && many
          ? `${many.x} blocks cost ${(Number(many.figures['p50 ms']) / Number(one.figures['p50 ms'])).toFixed(2)}× the time of 1 (p50), with the same ${many.figures['requests per ADD']} per ADD: the LIST's body grows with the node's blocks (${many.x - 1} full blocks ≈ ${(many.x - 1) * 62} allocations).`
          : '',
      loadAtStart,
    });
  } finally {
    await cleanCluster(ds);
    ds.close();
  }
}

const run: Record<Curve, () => Promise<void>> = { claim, add, gc, check, agent };
for (const c of chosen) {
  progress(`cost curve ${c}: start (load ${load1()})`);
  await run[c as Curve]();
  progress(`cost curve ${c}: done (load ${load1()})`);
}
