/**
 * The CNI plugin with and without the node agent's node cache, beside whereabouts and calico-ipam, in one run
 * (issue 10's benchmarks; not a test):
 *  - API requests per warm ADD, DEL and STATUS, from kube-apiserver's own apiserver_request_total
 *    (a scrape before and after each call), with the node cache and without it;
 *  - ADD and DEL latency p50/p99 of blockipam with the cache, blockipam without it,
 *    whereabouts v0.9.2 and calico-ipam (the v3.28 line, Kubernetes datastore; peer-ipams.ts),
 *    interleaved (each round runs one call of each).
 * The pods exist (bound to the bench's nodes), so the no-cache path does its real pod and
 * namespace GETs. The cache stands for a running agent that has seen every earlier write: it is
 * rewritten from the API server's state before each call, outside the timed and counted window
 * (test/plugin/helpers/node-cache-writer.ts, core's format module — what the agent does). Each
 * IPAM is exec'd as ptp would exec it (cniVersion 1.1.0, CNI_ARGS with the K8S_POD_* keys).
 *
 * Usage: node test/bench/node-cache-plugin-bench.ts [--runs N] [--without-whereabouts]
 *          [--without-calico] [--calico-api PATH] [--write-docs]
 *   --without-whereabouts / --without-calico: leave that peer out (e.g. while its Go build is
 *   not cached yet); calico-ipam is also skipped, and the output says so, when neither its build
 *   nor the projectcalico/api source (peer-ipams.ts' DEFAULT_CALICO_API) is here.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod } from 'blockipam/core';
import { controlPlane, kubectl } from '../helpers/control-plane.ts';
import { adminDatastore } from '../helpers/crds.ts';
import { ensurePlugin, repoRoot } from '../plugin/helpers/plugin-exe.ts';
import { writeNodeCache } from '../plugin/helpers/node-cache-writer.ts';
import {
  delta,
  option,
  fmt,
  pct,
  requestCounters,
  timed,
  total,
  writeDocsSection,
} from './plugin-bench-lib.ts';
import {
  API,
  CALICO_LABEL,
  cleanupCalico,
  cleanupWhereabouts,
  DEFAULT_CALICO_API,
  setupCalico,
  setupWhereabouts,
} from './peer-ipams.ts';

const argv = process.argv.slice(2);
const RUNS = Number(argv[argv.indexOf('--runs') + 1] ?? 0) || 60;
const WARMUP = 3;
const COUNT = 20;
const NS = 'bench-nc';
const cp = controlPlane();
const ds = adminDatastore();
const tmp = mkdtempSync(join(tmpdir(), 'bipam-ncbench-'));
const must = (args: string[], input?: string): void => {
  const r = kubectl(args, input === undefined ? {} : { input });
  if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
};

const withWhereabouts = !argv.includes('--without-whereabouts');
const withCalico = !argv.includes('--without-calico');
const wb = withWhereabouts ? setupWhereabouts(tmp, '10.244.128.0/17') : undefined;
const calico = withCalico
  ? setupCalico(tmp, option('--calico-api') ?? DEFAULT_CALICO_API, '10.241.0.0/16')
  : undefined;
const blockipam = ensurePlugin();
must(
  ['apply', '-f', '-'],
  JSON.stringify({
    apiVersion: 'ipam.blockipam.io/v1alpha1',
    kind: 'IPPool',
    metadata: { name: 'bench-nc-v4' },
    spec: { cidr: '10.243.0.0/16', blockSize: 26 },
  }),
);
must(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } }));

interface Ipam {
  readonly label: string;
  readonly name: string;
  readonly bin: string;
  /** The node its pods are bound to; undefined: no Kubernetes node (whereabouts). */
  readonly node?: string;
  readonly conf: Record<string, unknown>;
  /** The netconf's cniVersion, default 1.1.0 (calico-ipam of the v3.28 line: 1.0.0, as plugin-bench.ts runs it). */
  readonly cniVersion?: string;
  /** Top-level netconf fields it reads (calico-ipam's datastore settings). */
  readonly top?: Record<string, unknown>;
  readonly api: RegExp;
  /** Rewrites the node cache before a call (the agent having seen every earlier write). */
  readonly cache?: string;
}
const bipam = (label: string, node: string, cached: boolean): Ipam => ({
  label,
  name: cached ? 'blockipam, node cache' : 'blockipam, no node cache',
  bin: blockipam,
  node,
  conf: {
    type: 'blockipam',
    kubeconfig: cp.adminKubeconfig,
    nodeName: node,
    logFile: join(tmp, `${label}.log`),
    cacheDir: join(tmp, `cache-${label}`),
    nodeCacheFile: join(tmp, `${label}-node-cache.json`),
    ...(cached ? {} : { nodeCacheMaxAgeMs: 0 }),
  },
  api: API.blockipam,
  ...(cached ? { cache: join(tmp, `${label}-node-cache.json`) } : {}),
});
const peers: Ipam[] = [
  ...(wb
    ? [{ label: 'wb', name: 'whereabouts v0.9.2', bin: wb.bin, conf: wb.ipam(''), api: API.whereabouts }]
    : []),
  ...(calico
    ? [
        {
          label: 'calico',
          name: CALICO_LABEL,
          bin: calico.bin,
          node: 'bench-nc-calico',
          conf: calico.ipam('bench-nc-calico'),
          top: calico.top('bench-nc-calico'),
          cniVersion: '1.0.0',
          api: API.calico,
        },
      ]
    : []),
];
const ipams: Ipam[] = [bipam('cache', 'bench-nc-cache', true), bipam('api', 'bench-nc-api', false), ...peers];
const netconf = (ipam: Ipam): string =>
  JSON.stringify({
    cniVersion: ipam.cniVersion ?? '1.1.0',
    name: 'benchnet',
    type: 'ptp',
    ...ipam.top,
    ipam: ipam.conf,
  });
const uids = new Map<string, string>();
const cniEnv = (cmd: string, id: string): Record<string, string | undefined> => ({
  PATH: process.env.PATH,
  CNI_COMMAND: cmd,
  CNI_CONTAINERID: id,
  CNI_NETNS: cmd === 'STATUS' ? '' : '/var/run/netns/bench',
  CNI_IFNAME: cmd === 'STATUS' ? '' : 'eth0',
  CNI_PATH: cp.cniBin,
  ...(cmd === 'STATUS'
    ? {}
    : {
        CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${NS};K8S_POD_NAME=${id};K8S_POD_INFRA_CONTAINER_ID=${id};K8S_POD_UID=${uids.get(id) ?? `uid-${id}`}`,
      }),
});
const counters = () => requestCounters(cp.apiUrl, cp.adminToken, cp.caFile);

async function createPods(ipam: Ipam, ids: readonly string[]): Promise<void> {
  if (!ipam.node) return;
  must(
    ['apply', '-f', '-'],
    JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: ipam.node } }),
  );
  for (const id of ids) {
    const pod = await ds.transport.request<Pod>('POST', `/api/v1/namespaces/${NS}/pods`, {
      body: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: id },
        spec: { nodeName: ipam.node, containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
      },
    });
    uids.set(id, pod.metadata.uid ?? '');
  }
}

/** One call: the cache refreshed first (untimed), then timed; requests counted when asked. */
async function call(ipam: Ipam, cmd: string, id: string, count: boolean) {
  if (ipam.cache && ipam.node) await writeNodeCache(ds, ipam.node, ipam.cache);
  const before = count ? await counters() : undefined;
  const r = await timed(ipam.bin, cniEnv(cmd, id), netconf(ipam));
  const d = before ? delta(before, await counters(), ipam.api) : new Map<string, number>();
  return { ms: r.ms, ok: r.status === 0, out: r.stdout, requests: total(d), verbs: d };
}

const ids = (ipam: Ipam, kind: string, n: number): string[] =>
  Array.from({ length: n }, (_, i) => `${ipam.label}-${kind}${i}`);

async function main(): Promise<void> {
  const load = loadavg()[0] ?? 0;
  for (const ipam of ipams)
    await createPods(ipam, [...ids(ipam, 'w', WARMUP), ...ids(ipam, 'c', COUNT), ...ids(ipam, 's', RUNS)]);
  const counts = new Map<
    string,
    { add: number[]; del: number[]; status: number[]; verbs: Map<string, number> }
  >();
  for (const ipam of ipams) {
    for (const id of ids(ipam, 'w', WARMUP)) await call(ipam, 'ADD', id, false);
    const c = {
      add: [] as number[],
      del: [] as number[],
      status: [] as number[],
      verbs: new Map<string, number>(),
    };
    for (const [cmd, list] of [
      ['ADD', c.add],
      ['DEL', c.del],
    ] as const)
      for (const id of ids(ipam, 'c', COUNT)) {
        const r = await call(ipam, cmd, id, true);
        if (!r.ok) throw new Error(`${ipam.name} ${cmd} ${id} failed: ${r.out}`);
        list.push(r.requests);
        for (const [k, v] of r.verbs) c.verbs.set(`${cmd} ${k}`, (c.verbs.get(`${cmd} ${k}`) ?? 0) + v);
      }
    if (ipam.node) for (let i = 0; i < 5; i++) c.status.push((await call(ipam, 'STATUS', '', true)).requests);
    counts.set(ipam.label, c);
  }
  const lat = new Map(ipams.map((i) => [i.label, { add: [] as number[], del: [] as number[], failures: 0 }]));
  for (const cmd of ['ADD', 'DEL'] as const)
    for (let n = 0; n < RUNS; n++)
      for (const ipam of ipams) {
        const r = await call(ipam, cmd, `${ipam.label}-s${n}`, false);
        const o = lat.get(ipam.label)!;
        (cmd === 'ADD' ? o.add : o.del).push(r.ms);
        if (!r.ok) o.failures++;
      }
  for (const ipam of ipams) for (const id of ids(ipam, 'w', WARMUP)) await call(ipam, 'DEL', id, false);

  const mean = (v: readonly number[]): string =>
    (v.reduce((a, b) => a + b, 0) / Math.max(1, v.length)).toFixed(2);
  const verbs = (label: string, cmd: string): string =>
    [...(counts.get(label)?.verbs ?? [])]
      .filter(([k]) => k.startsWith(`${cmd} `))
      .map(([k, v]) => `${k.slice(cmd.length + 1).replace(/^[^/]*\//, '')} × ${(v / COUNT).toFixed(2)}`)
      .join(', ');
  const lines = [
    '## CNI plugin with the node cache',
    '',
    `Measured by \`node test/bench/node-cache-plugin-bench.ts\` on ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC: 2 cores, kube-apiserver ${cp.serverVersion} + etcd on loopback; load average at the start ${load.toFixed(1)}. Pods exist and are bound to the bench's nodes. "Node cache": the file is rewritten from the API server's state before each call, outside the timed and counted window — an agent that has seen every earlier write. Requests: kube-apiserver's \`apiserver_request_total\`, scraped before and after each call, ${COUNT} warm calls (after ${WARMUP} warm-up ADDs); latency: ${RUNS} rounds of one call per IPAM, spawn to exit.`,
    '',
    '| IPAM | API requests / ADD | API requests / DEL | API requests / STATUS | ADD p50 ms | ADD p99 ms | DEL p50 ms | DEL p99 ms | failures |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const ipam of ipams) {
    const c = counts.get(ipam.label)!;
    const l = lat.get(ipam.label)!;
    lines.push(
      `| ${ipam.name} | ${mean(c.add)} | ${mean(c.del)} | ${c.status.length ? mean(c.status) : 'n/a'} | ${fmt(pct(l.add, 50))} | ${fmt(pct(l.add, 99))} | ${fmt(pct(l.del, 50))} | ${fmt(pct(l.del, 99))} | ${l.failures} |`,
    );
  }
  const p50 = (label: string): number => pct(lat.get(label)?.add ?? [], 50);
  const ratio = (a: string, b: string): string => (p50(a) / p50(b)).toFixed(2);
  lines.push(
    '',
    `ADD p50 ratios, same run (below 1 = the first is faster): node cache / no node cache ${ratio('cache', 'api')}` +
      (calico
        ? `; node cache / calico-ipam ${ratio('cache', 'calico')} (issue 10's goal: ≤ 0.5); no node cache / calico-ipam ${ratio('api', 'calico')}`
        : withCalico
          ? '; calico-ipam skipped (its api source is absent: see the message above the table)'
          : '; calico-ipam not run (--without-calico)') +
      (wb
        ? `; node cache / whereabouts ${ratio('cache', 'wb')}; no node cache / whereabouts ${ratio('api', 'wb')}.`
        : '; whereabouts not run (--without-whereabouts).'),
    '',
    'Requests by kind (mean per call):',
    '',
    ...ipams.flatMap((i) => [`- ${i.name}: ADD ${verbs(i.label, 'ADD')}; DEL ${verbs(i.label, 'DEL')}`]),
  );
  const section = lines.join('\n');
  console.log(section);
  if (argv.includes('--write-docs'))
    writeDocsSection(join(repoRoot, 'docs', 'benchmarks.md'), section, '## CNI plugin with the node cache');
  for (const ipam of ipams.filter((i) => i.node)) kubectl(['delete', 'node', ipam.node!, '--wait=false']);
  kubectl(['delete', 'namespace', NS, '--wait=false']);
  kubectl(['delete', 'ippool', 'bench-nc-v4', '--wait=false']);
  if (wb) cleanupWhereabouts();
  if (calico) cleanupCalico();
  rmSync(tmp, { recursive: true, force: true });
}

await main();
