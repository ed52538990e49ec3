/**
 * The plugin against a previous build of itself, in ONE run on one machine (issue 9 acceptance:
 * "the plugin's warm ADD and VERSION figures … rerun in one run with the previous build … ratio
 * printed"). Not a test. Both executables are called in turn (interleaved), so load from
 * elsewhere on the machine falls on both alike:
 *  - VERSION: 60 rounds;
 *  - warm ADD and DEL: 5 warm-up ADDs each, 20 ADDs + DELs each counted with kube-apiserver's
 *    apiserver_request_total, then `--runs` spaced rounds (ADD of each, then DEL of each).
 * Each build has its own node name and cache directory; no node cache (the previous build has
 * none). CNI_ARGS names the pod (the pod and namespace GETs are made, as in the main plugin bench).
 *
 * Usage: node test/bench/plugin-compare-bench.ts --baseline BIN --baseline-label LABEL [--runs N] [--write-docs]
 *   BIN: the previous build's executable (e.g. `git worktree add /tmp/e9d99a6 e9d99a6`, then
 *   `node scripts/build-plugin.ts` there → /tmp/e9d99a6/build/plugin/blockipam).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { controlPlane, kubectl } from '../helpers/control-plane.ts';
import { ensurePlugin, repoRoot } from '../plugin/helpers/plugin-exe.ts';
import { writeDocSection } from './doc-section.ts';
import { delta, fmt, pct, requestCounters, timed, total } from './plugin-bench-lib.ts';

const { values: args } = parseArgs({
  options: {
    baseline: { type: 'string' },
    'baseline-label': { type: 'string', default: 'previous' },
    runs: { type: 'string', default: '30' },
    'write-docs': { type: 'boolean', default: false },
  },
});
if (!args.baseline) throw new Error('--baseline BIN is required');
const RUNS = Number(args.runs);
const cp = controlPlane();
const tmp = mkdtempSync(join(tmpdir(), 'bipam-compare-'));
const must = (a: string[], input?: string): void => {
  const r = kubectl(a, input === undefined ? {} : { input });
  if (r.status !== 0) throw new Error(`kubectl ${a.join(' ')}: ${r.stderr}`);
};

interface Build {
  readonly label: string;
  readonly bin: string;
  readonly node: string;
}
const builds: Build[] = [
  { label: 'now', bin: ensurePlugin(), node: 'cmp-now' },
  { label: args['baseline-label'], bin: args.baseline, node: 'cmp-base' },
];
const netconf = (b: Build): string =>
  JSON.stringify({
    cniVersion: '1.0.0',
    name: 'cmpnet',
    type: 'ptp',
    ipam: {
      type: 'blockipam',
      kubeconfig: cp.adminKubeconfig,
      nodeName: b.node,
      cacheDir: join(tmp, `cache-${b.node}`),
    },
  });
const env = (cmd: string, id: string): Record<string, string | undefined> => ({
  PATH: process.env.PATH,
  CNI_COMMAND: cmd,
  CNI_CONTAINERID: id,
  CNI_NETNS: '/var/run/netns/bench',
  CNI_IFNAME: 'eth0',
  CNI_PATH: cp.cniBin,
  CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=${id};K8S_POD_INFRA_CONTAINER_ID=${id};K8S_POD_UID=uid-${id}`,
});
const counters = () => requestCounters(cp.apiUrl, cp.adminToken, cp.caFile);
const API = /^(ipam\.blockipam\.io\/|\/pods |\/namespaces |\/nodes )/;

async function calls(b: Build, cmd: string, ids: readonly string[]): Promise<number> {
  let failures = 0;
  for (const id of ids) if ((await timed(b.bin, env(cmd, id), netconf(b))).status !== 0) failures++;
  return failures;
}

async function main(): Promise<void> {
  const load = loadavg().map((l) => l.toFixed(1));
  must(['apply', '-f', join(repoRoot, 'crds')]);
  must(['wait', '--for=condition=Established', '--timeout=60s', 'crd/ippools.ipam.blockipam.io']);
  must(
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'ipam.blockipam.io/v1alpha1',
      kind: 'IPPool',
      metadata: { name: 'cmp-v4' },
      spec: { cidr: '10.243.0.0/16', blockSize: 26 },
    }),
  );
  const version = new Map(builds.map((b) => [b.label, [] as number[]]));
  for (let i = 0; i < 60; i++)
    for (const b of builds)
      version
        .get(b.label)
        ?.push((await timed(b.bin, { CNI_COMMAND: 'VERSION' }, '{"cniVersion":"1.1.0"}')).ms);
  const requests = new Map<string, { add: number; del: number; failures: number }>();
  for (const b of builds) {
    const warm = Array.from({ length: 5 }, (_, i) => `${b.node}-w${i}`);
    const ids = Array.from({ length: 20 }, (_, i) => `${b.node}-c${i}`);
    let failures = await calls(b, 'ADD', warm);
    const c0 = await counters();
    failures += await calls(b, 'ADD', ids);
    const c1 = await counters();
    failures += await calls(b, 'DEL', ids);
    const c2 = await counters();
    failures += await calls(b, 'DEL', warm);
    requests.set(b.label, {
      add: total(delta(c0, c1, API)) / ids.length,
      del: total(delta(c1, c2, API)) / ids.length,
      failures,
    });
  }
  const lat = new Map(
    builds.map((b) => [b.label, { add: [] as number[], del: [] as number[], failures: 0 }]),
  );
  for (const cmd of ['ADD', 'DEL'] as const)
    for (let n = 0; n < RUNS; n++)
      for (const b of builds) {
        const r = await timed(b.bin, env(cmd, `${b.node}-s${n}`), netconf(b));
        const o = lat.get(b.label);
        if (!o) continue;
        (cmd === 'ADD' ? o.add : o.del).push(r.ms);
        if (r.status !== 0) o.failures++;
      }
  const [now, base] = builds.map((b) => b.label) as [string, string];
  const p50 = (m: Map<string, number[]>, label: string): number => pct(m.get(label) ?? [], 50);
  const adds = new Map([...lat].map(([k, v]) => [k, v.add]));
  const ratio = (m: Map<string, number[]>): string => (p50(m, now) / p50(m, base)).toFixed(2);
  const rows = builds.map((b) => {
    const l = lat.get(b.label);
    const r = requests.get(b.label);
    const v = version.get(b.label) ?? [];
    return `| ${b.label === now ? 'this build' : `previous build (${b.label})`} | ${fmt(pct(v, 50))} | ${fmt(pct(v, 99))} | ${fmt(pct(l?.add ?? [], 50))} | ${fmt(pct(l?.add ?? [], 99))} | ${fmt(pct(l?.del ?? [], 50))} | ${r?.add.toFixed(2)} | ${r?.del.toFixed(2)} | ${(l?.failures ?? 0) + (r?.failures ?? 0)} |`;
  });
  const body = [
    `Measured by \`node test/bench/plugin-compare-bench.ts --baseline … --baseline-label ${base}\` on ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC: 2 cores, kube-apiserver ${cp.serverVersion} + etcd on loopback; load average at the start ${load.join(' / ')} (1 / 5 / 15 min). Both Bun-compiled executables in ONE run, called in turn: VERSION 60 rounds; ADD and DEL ${RUNS} spaced rounds after 5 warm-up ADDs (warm: the block is claimed, the snapshot and kubeconfig caches are filled; no node cache — the previous build has none); requests from kube-apiserver's \`apiserver_request_total\` over 20 ADDs and their DELs per build. CNI_ARGS names a pod that does not exist (the pod and namespace GETs are made, as in §CNI plugin).`,
    '',
    '| build | VERSION p50 ms | VERSION p99 ms | warm ADD p50 ms | warm ADD p99 ms | DEL p50 ms | API requests / ADD | API requests / DEL | failures |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    `Ratio this build / previous build (p50, below 1 = faster now): VERSION ${ratio(version)}, warm ADD ${ratio(adds)}.`,
  ].join('\n');
  console.log(body);
  if (args['write-docs'])
    await writeDocSection(`### Against the previous build (${base})`, body, { after: '## CNI plugin' });
}

try {
  await main();
} finally {
  kubectl(['delete', 'ippools.ipam.blockipam.io', 'cmp-v4', '--ignore-not-found']);
  rmSync(tmp, { recursive: true, force: true });
}
