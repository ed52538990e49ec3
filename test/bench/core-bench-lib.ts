/**
 * Pieces of test/bench/core-bench.ts: API requests per operation on a real API server, memory-store
 * throughput with a pool holding blocks for 10,000 nodes, and the import cost of the lean transport
 * vs @kubernetes/client-node (esbuild bundles timed with `node -e "import(...)"`).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import {
  autoAssign,
  blockCidrFor,
  loadSnapshot,
  MemoryDatastore,
  mustParseCidr,
  newBlock,
  releaseByHandle,
} from 'blockipam/core';
import type { IPAMBlock, PoolSnapshot } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';

/** Requests per operation, by HTTP method, averaged over `runs`. */
export type PerOp = Record<string, number>;

async function countRequests(
  ds: KubeDatastore,
  runs: number,
  op: (i: number) => Promise<void>,
): Promise<PerOp> {
  const before = { ...ds.transport.stats.byMethod };
  const t0 = performance.now();
  for (let i = 0; i < runs; i++) await op(i);
  const out: PerOp = { ms: Math.round(((performance.now() - t0) / runs) * 10) / 10 };
  for (const [method, n] of Object.entries(ds.transport.stats.byMethod))
    if (n !== (before[method] ?? 0)) out[method] = (n - (before[method] ?? 0)) / runs;
  return out;
}

/** Warm allocation, claim, release: requests per operation on the real API server. */
export async function apiCosts(ds: KubeDatastore, runs: number): Promise<Record<string, PerOp>> {
  await ds.pools.create({ metadata: { name: 'bench' }, spec: { cidr: '10.90.0.0/16' } });
  const snapshot = await loadSnapshot(ds);
  const req = (node: string, id: string, withSnapshot: PoolSnapshot | undefined) => ({
    handle: `k8s-pod-network.${id}.eth0`,
    node,
    pod: { namespace: 'bench', name: id, uid: `uid-${id}` },
    nodeLabels: {},
    namespaceLabels: {},
    ...(withSnapshot ? { snapshot: withSnapshot } : {}),
  });
  const ok = async (p: ReturnType<typeof autoAssign>): Promise<void> => {
    const o = await p;
    if (!o.ok) throw new Error(o.message);
  };
  const claim = await countRequests(ds, runs, (i) =>
    ok(autoAssign(ds, req(`claim-node-${i}`, `claim-${i}`, snapshot))),
  );
  const warm = await countRequests(ds, runs, (i) =>
    ok(autoAssign(ds, req('claim-node-0', `warm-${i}`, snapshot))),
  );
  const warmNoSnapshot = await countRequests(ds, runs, (i) =>
    ok(autoAssign(ds, req('claim-node-0', `cold-${i}`, undefined))),
  );
  const release = await countRequests(ds, runs, async (i) => {
    await releaseByHandle(ds, `k8s-pod-network.warm-${i}.eth0`, { node: 'claim-node-0' });
  });
  return {
    'warm allocation (snapshot + labels given)': warm,
    'warm allocation (reads config, pools, reservations)': warmNoSnapshot,
    'allocation that claims a block': claim,
    'release by handle': release,
  };
}

/** The block of pool 10.0.0.0/10 (blockSize 26) at index `i`, spread over the pool. */
function spreadBlock(i: number, node: string, nowMs: number): IPAMBlock {
  const pool = mustParseCidr('10.0.0.0/10');
  const index = BigInt((i * 7919) % 65536); // 7919 is prime: distinct indexes for i < 65536
  return newBlock({
    cidr: blockCidrFor({ family: 4, value: pool.base + (index << 6n) }, 26),
    pool: 'big',
    node,
    nowMs,
  });
}

/** Allocations per second on the memory store with blocks for `nodes` nodes. */
export async function memoryThroughput(
  nodes: number,
  ops: number,
  concurrency: number,
): Promise<Record<string, number>> {
  const now = Date.now();
  const blocks = Array.from({ length: nodes }, (_, i) => spreadBlock(i, `node-${i}`, now));
  const ds = new MemoryDatastore({
    pools: [{ metadata: { name: 'big' }, spec: { cidr: '10.0.0.0/10' } }],
    blocks,
  });
  const snapshot = await loadSnapshot(ds);
  const base = {
    pod: { namespace: 'b', name: 'p', uid: 'u' },
    snapshot,
    nodeLabels: {},
    namespaceLabels: {},
  };
  const run = async (
    count: number,
    make: (i: number) => Parameters<typeof autoAssign>[1],
  ): Promise<number> => {
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (let i = next++; i < count; i = next++) {
          const o = await autoAssign(ds, make(i));
          if (!o.ok) throw new Error(o.message);
        }
      }),
    );
    return Math.round(count / ((performance.now() - t0) / 1000));
  };
  const warm = await run(ops, (i) => ({ ...base, handle: `n.w${i}.eth0`, node: `node-${(i * 31) % nodes}` }));
  const reads = ds.stats.reads;
  const claims = await run(Math.min(ops, 500), (i) => ({
    ...base,
    handle: `n.c${i}.eth0`,
    node: `new-node-${i}`,
  }));
  const claimReads = (ds.stats.reads - reads) / Math.min(ops, 500);
  return {
    'warm allocations/s': warm,
    'allocations that claim a block/s': claims,
    'reads per claim': claimReads,
    blocks: (await ds.blocks.listMetadata()).length,
  };
}

/** Median start-up (ms) of `node -e "import(file)"` over `runs`, and of an empty node. */
export async function importCost(
  root: string,
  runs: number,
): Promise<Record<string, { wall: number; cpu: number }>> {
  const dir = mkdtempSync(join(tmpdir(), 'blockipam-import-'));
  const lean = join(dir, 'lean.mjs');
  const client = join(dir, 'client-node.mjs');
  const leanEntry = join(dir, 'lean-entry.ts');
  writeFileSync(
    leanEntry,
    `export { KubeDatastore, autoAssign, releaseByHandle } from '${root}/core/index.ts';\nexport { loadKubeconfig, KubeTransport } from '${root}/core/kube/index.ts';\n`,
  );
  const clientEntry = join(dir, 'client-entry.ts');
  writeFileSync(clientEntry, `export { KubeConfig, CustomObjectsApi } from '@kubernetes/client-node';\n`);
  const common = {
    bundle: true,
    platform: 'node' as const,
    format: 'esm' as const,
    target: 'node24',
    logLevel: 'silent' as const,
    nodePaths: [join(root, 'node_modules')],
    banner: {
      js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
    },
  };
  await build({ ...common, entryPoints: [leanEntry], outfile: lean });
  await build({ ...common, entryPoints: [clientEntry], outfile: client });
  // Round-robin over the variants so background load hits them alike. Wall time includes waiting
  // for a CPU on a shared machine; the child's own CPU time (user + system, printed at exit) does
  // not, so both are reported. Median per variant.
  const cpu =
    '.then(() => { const u = process.cpuUsage(); process.stdout.write(String(u.user + u.system)); })';
  const scripts: Record<string, string> = {
    'empty node': `Promise.resolve()${cpu}`,
    'node:https + node:crypto alone (what any API client loads)': `import('node:https').then(() => import('node:crypto'))${cpu}`,
    'lean core bundle (allocator + KubeDatastore + transport)': `import(${JSON.stringify(lean)})${cpu}`,
    '@kubernetes/client-node bundle (KubeConfig + CustomObjectsApi)': `import(${JSON.stringify(client)})${cpu}`,
  };
  const wall = new Map<string, number[]>(Object.keys(scripts).map((name) => [name, []]));
  const cpuMs = new Map<string, number[]>(Object.keys(scripts).map((name) => [name, []]));
  for (let i = 0; i < runs; i++) {
    for (const [name, script] of Object.entries(scripts)) {
      const t0 = performance.now();
      const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`node -e ${script} failed: ${r.stderr}`);
      wall.get(name)?.push(performance.now() - t0);
      cpuMs.get(name)?.push(Number(r.stdout) / 1000);
    }
  }
  const median = (xs: number[]): number =>
    Math.round(xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]! * 10) / 10;
  return Object.fromEntries(
    [...wall].map(([name, xs]) => [name, { wall: median(xs), cpu: median(cpuMs.get(name) ?? []) }]),
  );
}
