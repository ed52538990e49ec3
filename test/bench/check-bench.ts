/**
 * Benchmark of `ipamctl check` on the real API server (a script, not a test):
 *
 *   node_modules/.bin/node test/bench/check-bench.ts [--runs 5] [--blocks 1000] [--per-block 20]
 *
 * Seeds a healthy cluster of BLOCKS full IPAMBlock objects with PER-BLOCK allocations each (one
 * pool, 50 nodes, one live pod per allocation with its IP set through the status subresource),
 * created directly with bounded concurrency; then runs the real executable
 * (`node cli/main.ts check --quiet`) RUNS times, prints the median / min / max wall time, checks
 * that every run exits 0, and rewrites the `## ipamctl` section of docs/benchmarks.md. Removes
 * what it seeded at the end. Uses the run's control plane (CP_* env) or starts a private one.
 */
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { KubeDatastore, KubeTransport } from 'blockipam/core/kube';
import { loadKubeconfig } from 'blockipam/core/kubeconfig';
import {
  adminDatastore,
  cleanCluster,
  createNamespace,
  createNode,
  poolObject,
  uniqueNamespace,
} from '../cli/cluster.ts';
import { controlPlane } from '../helpers/control-plane.ts';
import { runCheck, seedCheckBlock } from './cost-curves/check.ts';
import { bounded, median, SEED_CONCURRENCY } from './cost-curves/common.ts';
import { writeDocSection } from './doc-section.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    blocks: { type: 'string', default: '1000' },
    'per-block': { type: 'string', default: '20' },
  },
});
const RUNS = Number(values.runs);
const BLOCKS = Number(values.blocks);
const PER_BLOCK = Number(values['per-block']);
const NODES = 50;
const root = fileURLToPath(new URL('../../', import.meta.url));

/** Seeds nodes, pods (with IPs) and blocks; returns the seeding time in seconds. */
async function seed(ds: KubeDatastore, ns: string): Promise<number> {
  const started = performance.now();
  await ds.pools.create(poolObject('bench', '10.200.0.0/16'));
  await bounded(
    Array.from({ length: NODES }, (_, i) => `bench-node-${i}`),
    (name) => createNode(ds, name),
  );
  await createNamespace(ds, ns);
  const indexes = Array.from({ length: BLOCKS }, (_, b) => b);
  let done = 0;
  await bounded(indexes, async (b) => {
    await seedCheckBlock(ds, {
      ns,
      pool: 'bench',
      cidr: `10.200.${Math.floor(b / 4)}.${(b % 4) * 64}/26`,
      node: `bench-node-${b % NODES}`,
      key: b,
      perBlock: PER_BLOCK,
    });
    done += 1;
    if (done % 100 === 0) process.stderr.write(`seeded ${done}/${BLOCKS} blocks\n`);
  });
  return (performance.now() - started) / 1000;
}

async function main(): Promise<void> {
  const cp = controlPlane();
  adminDatastore().close(); // installs the CRDs
  // 10 min per request: deleting 20,000 pods in one DELETE collection takes minutes on 2 cores.
  const ds = new KubeDatastore(new KubeTransport(loadKubeconfig(cp.adminKubeconfig), { timeoutMs: 600_000 }));
  const ns = uniqueNamespace('ipamctl-bench');
  await cleanCluster(ds);
  try {
    const seedSeconds = await seed(ds, ns);
    process.stderr.write(`seeded in ${seedSeconds.toFixed(1)} s; running check ${RUNS} times\n`);
    const times = Array.from({ length: RUNS }, () => runCheck(root, cp.adminKubeconfig));
    const fmt = (s: number): string => `${s.toFixed(2)} s`;
    const line = `check over ${BLOCKS} blocks / ${BLOCKS * PER_BLOCK} allocations / ${BLOCKS * PER_BLOCK} pods / ${NODES} nodes: median ${fmt(median(times))} (min ${fmt(Math.min(...times))}, max ${fmt(Math.max(...times))}, ${RUNS} runs, exit 0 each)`;
    console.log(line);
    await writeDocSection(
      '## ipamctl',
      `Measured by \`node_modules/.bin/node test/bench/check-bench.ts\` (${new Date().toISOString().slice(0, 10)}).

| What | Figure |
| --- | --- |
| \`ipamctl check\` wall time, median of ${RUNS} runs | **${fmt(median(times))}** (min ${fmt(Math.min(...times))}, max ${fmt(Math.max(...times))}) |
| Cluster | ${BLOCKS} IPAMBlocks (/26), ${BLOCKS * PER_BLOCK} allocations, ${BLOCKS * PER_BLOCK} live pods with their IPs, ${NODES} nodes, 1 pool |
| Seeding (not part of the figure) | ${seedSeconds.toFixed(0)} s |

Method: a healthy cluster is seeded on the local control plane (kube-apiserver ${cp.serverVersion} + etcd on
loopback, same machine): one pod per allocation, created and given its IP through the status
subresource; full block objects created directly, ${SEED_CONCURRENCY} requests in flight. Each run is the
real executable, \`node cli/main.ts check --quiet\` (process start and the @kubernetes/client-node
import included), reading everything with paginated LISTs (500 per page) and running every
check; every run exits 0. Machine: ${cpus().length} cores (${cpus()[0]?.model.trim() ?? 'unknown'}), ${Math.round(totalmem() / 2 ** 30)} GiB; the API server,
etcd and ipamctl share those cores.`,
    );
  } finally {
    await cleanCluster(ds);
    await deleteAllPods(ds, ns);
    await ds.transport.request('DELETE', `/api/v1/namespaces/${ns}`).catch(() => undefined);
    ds.close();
  }
}

/**
 * Deletes every pod of `ns`. kube-apiserver cuts a DELETE collection at its own request timeout
 * (60 s) — 20,000 pods take longer on 2 cores — so it is sent again until the LIST is empty.
 */
async function deleteAllPods(ds: KubeDatastore, ns: string): Promise<void> {
  const path = `/api/v1/namespaces/${ns}/pods`;
  for (let attempt = 1; attempt <= 20; attempt++) {
    await ds.transport.request('DELETE', path, { query: { gracePeriodSeconds: '0' } }).catch(() => undefined);
    const left = await ds.transport.request<{ items?: unknown[] }>('GET', path, { query: { limit: '1' } });
    if ((left.items ?? []).length === 0) return;
  }
  process.stderr.write(`pods of ${ns} still present after 20 DELETE collections\n`);
}

await main();
