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
import { claimCurveApi, claimCurveMemory } from './claim.ts';
import { load1, progress } from './common.ts';
import { publishCurve } from './report.ts';

const CURVES = ['claim'] as const;
type Curve = (typeof CURVES)[number];

const { values } = parseArgs({ options: { only: { type: 'string', default: CURVES.join(',') } } });
const chosen = (values.only ?? '').split(',').filter((c) => c !== '');
for (const c of chosen)
  if (!(CURVES as readonly string[]).includes(c))
    throw new RangeError(`--only: unknown curve "${c}" (known: ${CURVES.join(', ')})`);

const COMMAND = 'node_modules/.bin/node test/bench/cost-curves/main.ts';

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

const run: Record<Curve, () => Promise<void>> = { claim };
for (const c of chosen) {
  progress(`cost curve ${c}: start (load ${load1()})`);
  await run[c as Curve]();
  progress(`cost curve ${c}: done (load ${load1()})`);
}
