/**
 * Core benchmark (a script, not a test): API requests per warm allocation / block claim / release
 * counted on a real kube-apiserver through the transport's counter; allocations per second on the
 * memory store with a pool holding blocks for 10,000 nodes; import cost of the lean transport vs
 * @kubernetes/client-node. Prints the figures and rewrites the `## Core` section of
 * docs/benchmarks.md.
 *
 * Usage: node_modules/.bin/node test/bench/core-bench.ts [--no-write]
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { adminDatastore, wipeBlockipam } from '../helpers/crds.ts';
import { controlPlane } from '../helpers/control-plane.ts';
import { apiCosts, importCost, memoryThroughput } from './core-bench-lib.ts';
import type { PerOp } from './core-bench-lib.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const API_RUNS = 20;
const NODES = 10_000;

const fmt = (op: PerOp): string =>
  Object.entries(op)
    .filter(([method]) => method !== 'ms')
    .map(([method, n]) => `${n} ${method}`)
    .join(' + ') || '0';

async function main(): Promise<void> {
  const cp = controlPlane();
  const ds = adminDatastore();
  await wipeBlockipam(ds);
  const api = await apiCosts(ds, API_RUNS);
  await wipeBlockipam(ds);
  ds.close();
  const memory = await memoryThroughput(NODES, 20_000, 16);
  const imports = await importCost(root, 15);

  const lines = [
    '## Core',
    '',
    `Measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC by \`node_modules/.bin/node test/bench/core-bench.ts\`; machine: ${cpus().length} cores (load average at the start ${loadavg()[0]?.toFixed(1)}), Node ${process.versions.node}, kube-apiserver ${cp.serverVersion} + etcd on loopback.`,
    '',
    `**API requests per operation** (real API server, counted by the lean transport's request counter, mean of ${API_RUNS} sequential operations; "snapshot" = IPAMConfig + IPPools + IPReservations passed in, see docs/design-core.md):`,
    '',
    '| operation | requests | mean ms (loaded machine) |',
    '|---|---|---|',
    ...Object.entries(api).map(([op, n]) => `| ${op} | ${fmt(n)} | ${n.ms} |`),
    '',
    `**Memory store throughput** (pool 10.0.0.0/10 of /26 blocks holding ${memory.blocks} blocks, ${NODES} nodes; 16 concurrent callers; allocator + in-memory datastore, each datastore call yields once to the event loop):`,
    '',
    '| figure | value |',
    '|---|---|',
    `| warm allocations per second (affine block has room) | ${memory['warm allocations/s']} |`,
    `| allocations that claim a new block, per second | ${memory['allocations that claim a block/s']} |`,
    `| datastore reads per claim (LIST affine blocks, metadata LIST of one /16 region) | ${memory['reads per claim']} |`,
    '',
    'The claim search starts at a node-derived offset, LISTs the block metadata of one /16 region (≤ 1,024 blocks of /26; ~160 here) and jumps over merged taken spans: its cost grows with the blocks of a region, never with the pool size or the total number of blocks.',
    '',
    '**Import cost** (median wall time of `node -e "import(bundle)"` over 15 runs, variants interleaved, esbuild ESM bundles; includes Node start-up; CPU time is that of the child process, insensitive to other jobs on the machine):',
    '',
    '| what | wall ms | CPU ms (user + system) |',
    '|---|---|---|',
    ...Object.entries(imports).map(([what, ms]) => `| ${what} | ${ms.wall} | ${ms.cpu} |`),
    '',
  ];
  const section = lines.join('\n');
  console.log(section);
  if (process.argv.includes('--no-write')) return;
  const file = join(root, 'docs', 'benchmarks.md');
  const text = readFileSync(file, 'utf8');
  const start = text.indexOf('## Core');
  const end = text.indexOf('\n## ', start + 1);
  const next =
    start < 0
      ? `${text.trimEnd()}\n\n${section}`
      : `${text.slice(0, start)}${section}${end < 0 ? '' : text.slice(end)}`;
  writeFileSync(file, next);
  console.log(`wrote the Core section of ${file}`);
}

await main();
