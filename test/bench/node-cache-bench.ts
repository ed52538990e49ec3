/**
 * Node cache transport benchmark (the open design question: file or local socket; not a test).
 * The plugin's cost of getting a realistic node cache — 4 blocks of /26 holding 110 pods' addresses,
 * 110 pods with typical annotations, their 10 namespaces, 2 pools, config, 1 reservation — and
 * validating it with core's decoder, inside a Bun-compiled executable as the plugin is built:
 *  - file: readFileSync of the document the agent wrote (atomically) + decodeNodeCache;
 *  - socket: connect to a Unix socket server (a separate Node process, as the agent would be)
 *    that writes the same document and closes + decodeNodeCache;
 *  - parse: the file read + JSON.parse alone (what the checks add on top of parsing);
 *  - none: the same executable doing nothing (the process floor).
 * Runs are interleaved; the probe reports its own read and decode times and the time since its
 * process started; the wall time is spawn to exit.
 *
 * Usage: node test/bench/node-cache-bench.ts [--runs N] [--write-docs]
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { allocateOrdinal, buildNodeCache, encodeNodeCache, mustParseCidr, newBlock } from 'blockipam/core';
import type { IPAMBlock, Namespace, Pod } from 'blockipam/core';
import { repoRoot } from '../plugin/helpers/plugin-exe.ts';
import { fmt, pct, timed, writeDocsSection } from './plugin-bench-lib.ts';

const argv = process.argv.slice(2);
const RUNS = Number(argv[argv.indexOf('--runs') + 1] ?? 0) || 40;
const NODE = 'bench-node';
const CLUSTER = 'c0ffee00-0000-4000-8000-000000000000';
const PODS = 110;
const now = Date.now();

/** 110 pods on 4 blocks: the kubelet's default maxPods on one node. */
function realisticDocument(): string {
  const pods: Pod[] = [];
  const namespaces: Namespace[] = [];
  for (let n = 0; n < 10; n++)
    namespaces.push({
      metadata: {
        name: `ns-${n}`,
        uid: `0000000${n}-aaaa-4bbb-8ccc-dddddddddddd`,
        labels: { 'kubernetes.io/metadata.name': `ns-${n}`, team: `team-${n % 3}` },
        annotations: n === 3 ? { 'ipam.blockipam.io/ippools': '["default-v4"]' } : {},
      },
    });
  const blocks: IPAMBlock[] = [0, 1, 2, 3].map((i) =>
    newBlock({ cidr: mustParseCidr(`10.244.${i}.0/26`), pool: 'default-v4', node: NODE, nowMs: now }),
  );
  for (let p = 0; p < PODS; p++) {
    const ns = `ns-${p % 10}`;
    const uid = `${String(p).padStart(8, '0')}-1111-4222-8333-444444444444`;
    const annotations: Record<string, string> = {
      'kubernetes.io/config.seen': '2026-12-01T08:00:00.000000000Z',
      'kubernetes.io/config.source': 'api',
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': '9090',
      'checksum/config': 'a3f5c0e1b2d4f6a8c0e2b4d6f8a0c2e4b6d8f0a2c4e6b8d0f2a4c6e8b0d2f4a6',
    };
    // one pod in ten carries a large annotation (e.g. a sidecar's config or last-applied JSON)
    if (p % 10 === 0) annotations['kubectl.kubernetes.io/last-applied-configuration'] = 'x'.repeat(2048);
    pods.push({ metadata: { namespace: ns, name: `pod-${p}`, uid, annotations }, spec: { nodeName: NODE } });
    const b = p % 4;
    const block = blocks[b]!;
    blocks[b] = allocateOrdinal(
      block,
      2 + Math.floor(p / 4),
      {
        handle: `k8s-pod-network.${'f'.repeat(56)}${String(p).padStart(8, '0')}.eth0`,
        network: 'k8s-pod-network',
        namespace: ns,
        pod: `pod-${p}`,
        podUID: uid,
        node: NODE,
      },
      now,
    )!.block;
  }
  return encodeNodeCache(
    buildNodeCache({
      clusterUID: CLUSTER,
      node: { metadata: { name: NODE, uid: 'node-uid', labels: { 'kubernetes.io/hostname': NODE } } },
      heartbeatAtMs: now,
      generation: 1,
      writer: { name: 'bench', pid: process.pid },
      blocks: blocks.map((b, i) => ({
        ...b,
        metadata: { ...b.metadata, resourceVersion: String(1000 + i) },
      })),
      config: { metadata: { name: 'default' }, spec: { maxBlocksPerNode: 20 } },
      pools: [
        {
          metadata: { name: 'default-v4', creationTimestamp: '2026-11-01T00:00:00Z' },
          spec: { cidr: '10.244.0.0/16' },
        },
        {
          metadata: { name: 'default-v6', creationTimestamp: '2026-11-01T00:00:00Z' },
          spec: { cidr: 'fd00:10:244::/56' },
        },
      ],
      reservations: [{ metadata: { name: 'edge' }, spec: { reservedCIDRs: ['10.244.255.0/24'] } }],
      pods,
      namespaces,
    }),
  );
}

const tmp = mkdtempSync(join(tmpdir(), 'bipam-cache-bench-'));
const probe = join(tmp, 'node-cache-probe');
const built = spawnSync(
  join(repoRoot, 'node_modules', '.bin', 'bun'),
  [
    'build',
    '--compile',
    '--bytecode',
    '--minify',
    '--no-compile-autoload-dotenv',
    '--no-compile-autoload-bunfig',
    '--no-compile-autoload-tsconfig',
    '--no-compile-autoload-package-json',
    join(repoRoot, 'test', 'bench', 'node-cache-probe.ts'),
    '--outfile',
    probe,
  ],
  { encoding: 'utf8' },
);
if (built.status !== 0) throw new Error(`probe build failed: ${built.stderr}`);

const text = realisticDocument();
const file = join(tmp, 'node-cache.json');
writeFileSync(file, text);
const socketPath = join(tmp, 'node-cache.sock');
// The agent's side of a socket transport: a separate process answering each connection with
// the current document (already encoded, as an agent would hold it) and closing.
const server = spawn(
  process.execPath,
  [
    '-e',
    `const net=require('node:net'),fs=require('node:fs');const t=fs.readFileSync(${JSON.stringify(file)});` +
      `net.createServer(c=>c.end(t)).listen(${JSON.stringify(socketPath)},()=>console.log('ready'));`,
  ],
  { stdio: ['ignore', 'pipe', 'ignore'] },
);
await new Promise<void>((resolve) => server.stdout.once('data', () => resolve()));

interface Probe {
  ok: boolean;
  bytes: number;
  readMs: number;
  decodeMs: number;
  sinceStartMs: number;
}
const modes = ['file', 'socket', 'parse', 'none'] as const;
const results: Record<(typeof modes)[number], { wall: number[]; probe: Probe[] }> = {
  file: { wall: [], probe: [] },
  socket: { wall: [], probe: [] },
  parse: { wall: [], probe: [] },
  none: { wall: [], probe: [] },
};
const load = loadavg()[0] ?? 0;
const env = { PATH: process.env.PATH };
try {
  for (let i = 0; i < RUNS + 3; i++) {
    for (const mode of modes) {
      const where = mode === 'socket' ? socketPath : file;
      const r = await timed(probe, env, '', [mode, where, CLUSTER, NODE]);
      const p = JSON.parse(r.stdout) as Probe;
      if (!p.ok) throw new Error(`probe ${mode} failed: ${r.stdout}`);
      if (i < 3) continue; // warm-up (page cache, first exec of the binary)
      results[mode].wall.push(r.ms);
      results[mode].probe.push(p);
    }
  }
} finally {
  server.kill();
  rmSync(tmp, { recursive: true, force: true });
}

const row = (mode: (typeof modes)[number]): string => {
  const { wall, probe: ps } = results[mode];
  const read = ps.map((p) => p.readMs);
  const both = ps.map((p) => p.readMs + p.decodeMs);
  return `| ${mode} | ${fmt(pct(read, 50))} | ${fmt(
    pct(
      ps.map((p) => p.decodeMs),
      50,
    ),
  )} | ${fmt(pct(both, 50))} | ${fmt(pct(both, 99))} | ${fmt(
    pct(
      ps.map((p) => p.sinceStartMs),
      50,
    ),
  )} | ${fmt(pct(wall, 50))} | ${fmt(pct(wall, 99))} |`;
};
const section = `## Node cache transport

Measured by \`node test/bench/node-cache-bench.ts\` on ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC: ${cpus().length} cores, load average at the start ${load.toFixed(1)}, Bun-compiled probe (\`test/bench/node-cache-probe.ts\`, built like the plugin), ${RUNS} interleaved runs per mode after 3 warm-up rounds.
Document: 4 blocks of /26 holding 110 allocations, 110 pods (5 annotations each, one in ten with a 2 KiB one), 10 namespaces, 2 pools, config, 1 reservation: **${(text.length / 1024).toFixed(0)} KiB** of JSON. _read_ = getting the text, _decode_ = \`decodeNodeCache\` (parse + every check) and one pod lookup (_parse_: \`JSON.parse\` alone); _since start_ = from the probe's process start to the end of decode; _wall_ = spawn to exit.

| transport | read p50 ms | decode p50 ms | read + decode p50 ms | read + decode p99 ms | since start p50 ms | wall p50 ms | wall p99 ms |
| --- | --- | --- | --- | --- | --- | --- | --- |
${modes.map(row).join('\n')}
`;
console.log(section);
if (argv.includes('--write-docs'))
  writeDocsSection(join(repoRoot, 'docs', 'benchmarks.md'), section, '## Node cache transport');
