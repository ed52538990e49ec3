/**
 * CNI plugin benchmark (issue 4 item 6, issue 13 item 1; not a test). One run, one machine, side by side:
 *  - start-up of the standalone executable (VERSION): the Bun build that ships, and an empty
 *    Node process as the floor of a JavaScript runtime;
 *  - ADD and DEL latency p50/p99 of blockipam, host-local (files: the floor for a
 *    process-per-call IPAM), whereabouts v0.9.2 (a CRD-based peer) and calico-ipam (Calico's
 *    IPAM, Kubernetes datastore, the v3.28 line) on the same API server;
 *  - a burst of 100 parallel ADDs on one node (wall time, failures, 409 conflicts);
 *  - API requests per ADD and per DEL, from kube-apiserver's own apiserver_request_total.
 * Each IPAM is exec'd directly as ptp would exec it (same env, same stdin shape).
 *
 * Usage: node test/bench/plugin-bench.ts [--runs N] [--calico-api PATH] [--write-docs] [--burst-only]
 *   --calico-api: the projectcalico/api source tarball calico-ipam is built with (peer-ipams.ts'
 *   DEFAULT_CALICO_API by default); when it is absent, calico-ipam is skipped and the output says so.
 *   Under scripts/run-tests.ts' environment it uses that control plane, else starts one.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { controlPlane, kubectl } from '../helpers/control-plane.ts';
import { ensurePlugin, repoRoot } from '../plugin/helpers/plugin-exe.ts';
import { readBlockipamLogs } from './churn-lib.ts';
import { delta, option, fmt, requestCounters, timed, total } from './plugin-bench-lib.ts';
import { percentile as pct } from './cost-curves/common.ts';
import { writeDocSection } from './doc-section.ts';
import {
  API,
  applyNodes,
  CALICO_LABEL,
  cleanupCalico,
  cleanupWhereabouts,
  DEFAULT_CALICO_API,
  setupCalico,
  setupWhereabouts,
  must,
} from './peer-ipams.ts';

const argv = process.argv.slice(2);
const RUNS = Number(option('--runs') ?? 0) || 60;
const WARMUP = 5;
const BURST = 100;
/** Calls per IPAM in the request-counting phase. */
const COUNT = 20;
const cp = controlPlane();
const tmp = mkdtempSync(join(tmpdir(), 'bipam-bench-'));

const wb = setupWhereabouts(tmp);
const calicoApi = option('--calico-api') ?? DEFAULT_CALICO_API;
const calico = setupCalico(tmp, calicoApi);
const hostLocal = join(cp.cniBin, 'host-local');
const blockipam = ensurePlugin();
must(['apply', '-f', join(repoRoot, 'crds')]);
must([
  'wait',
  '--for=condition=Established',
  '--timeout=60s',
  'crd/ippools.ipam.blockipam.io',
  'crd/ipamblocks.ipam.blockipam.io',
]);
applyNodes(['bench-calico-node']);
const pool = {
  apiVersion: 'ipam.blockipam.io/v1alpha1',
  kind: 'IPPool',
  metadata: { name: 'bench-v4' },
  spec: { cidr: '10.240.0.0/16', blockSize: 26 },
};
must(['apply', '-f', '-'], JSON.stringify(pool));

interface Ipam {
  /** container-ID prefix */
  readonly label: string;
  /** as the tables show it */
  readonly name: string;
  readonly bin: string;
  readonly conf: Record<string, unknown>;
  /** Top-level netconf fields besides cniVersion, name, type (calico reads its datastore there). */
  readonly top?: Record<string, unknown>;
  /** apiserver_request_total keys that belong to this IPAM */
  readonly api?: RegExp;
}
const bipamLog = join(tmp, 'blockipam.log');
const ipams: Ipam[] = [
  {
    label: 'blockipam',
    name: 'blockipam',
    bin: blockipam,
    conf: {
      type: 'blockipam',
      kubeconfig: cp.adminKubeconfig,
      nodeName: 'bench-node',
      logFile: bipamLog,
      cacheDir: join(tmp, 'cache'),
    },
    api: API.blockipam,
  },
  {
    label: 'host-local',
    name: 'host-local',
    bin: hostLocal,
    conf: { type: 'host-local', subnet: '10.241.0.0/16', dataDir: join(tmp, 'host-local') },
  },
  {
    label: 'whereabouts',
    name: 'whereabouts',
    bin: wb.bin,
    conf: wb.ipam('bench-node'),
    api: API.whereabouts,
  },
  ...(calico
    ? [
        {
          label: 'calico',
          name: CALICO_LABEL,
          bin: calico.bin,
          conf: calico.ipam('bench-calico-node'),
          top: calico.top('bench-calico-node'),
          api: API.calico,
        },
      ]
    : []),
];
const netconf = (ipam: Ipam): string =>
  JSON.stringify({ cniVersion: '1.0.0', name: 'benchnet', type: 'ptp', ...ipam.top, ipam: ipam.conf });
const cniEnv = (cmd: string, id: string): Record<string, string | undefined> => ({
  PATH: process.env.PATH,
  CNI_COMMAND: cmd,
  CNI_CONTAINERID: id,
  CNI_NETNS: '/var/run/netns/bench',
  CNI_IFNAME: 'eth0',
  CNI_PATH: cp.cniBin,
  CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=${id};K8S_POD_INFRA_CONTAINER_ID=${id};K8S_POD_UID=uid-${id}`,
});
const counters = () => requestCounters(cp.apiUrl, cp.adminToken, cp.caFile);

async function phase(
  ipam: Ipam,
  cmd: string,
  ids: readonly string[],
): Promise<{ ms: number[]; requests: number; kinds: Map<string, number>; failures: number }> {
  const before = await counters();
  const ms: number[] = [];
  let failures = 0;
  for (const id of ids) {
    const r = await timed(ipam.bin, cniEnv(cmd, id), netconf(ipam));
    if (r.status !== 0) failures++;
    ms.push(r.ms);
  }
  const d = ipam.api ? delta(before, await counters(), ipam.api) : new Map<string, number>();
  return { ms, requests: total(d), kinds: d, failures };
}

/** Warm-up, then API requests per ADD and per DEL over COUNT calls (this IPAM alone). */
async function counted(ipam: Ipam) {
  const warm = Array.from({ length: WARMUP }, (_, i) => `${ipam.label}-w${i}`);
  await phase(ipam, 'ADD', warm);
  const ids = Array.from({ length: COUNT }, (_, i) => `${ipam.label}-c${i}`);
  const add = await phase(ipam, 'ADD', ids);
  const del = await phase(ipam, 'DEL', ids);
  await phase(ipam, 'DEL', warm);
  return { add: add.requests / COUNT, del: del.requests / COUNT, addKinds: add.kinds, delKinds: del.kinds };
}

/**
 * Latency: RUNS rounds, each running one ADD of every IPAM in turn, then the same for DEL, so
 * that load from elsewhere on the machine falls on all of them alike.
 */
async function interleaved(list: readonly Ipam[]) {
  const out = new Map(list.map((i) => [i.label, { add: [] as number[], del: [] as number[], failures: 0 }]));
  for (const cmd of ['ADD', 'DEL'] as const) {
    for (let n = 0; n < RUNS; n++) {
      for (const ipam of list) {
        const r = await timed(ipam.bin, cniEnv(cmd, `${ipam.label}-s${n}`), netconf(ipam));
        const o = out.get(ipam.label);
        if (!o) continue;
        (cmd === 'ADD' ? o.add : o.del).push(r.ms);
        if (r.status !== 0) o.failures++;
      }
    }
  }
  return out;
}

/** Latency of consecutive calls of one IPAM: RUNS ADDs back to back, then their DELs. */
async function backToBack(ipam: Ipam) {
  const ids = Array.from({ length: RUNS }, (_, i) => `${ipam.label}-q${i}`);
  const add = await phase(ipam, 'ADD', ids);
  const del = await phase(ipam, 'DEL', ids);
  return { add: add.ms, del: del.ms, failures: add.failures + del.failures };
}

async function burst(ipam: Ipam) {
  const ids = Array.from({ length: BURST }, (_, i) => `${ipam.label}-b${i}`);
  const before = await counters();
  const t0 = Date.now();
  const runs = await Promise.all(ids.map((id) => timed(ipam.bin, cniEnv('ADD', id), netconf(ipam))));
  const wallMs = Date.now() - t0;
  const d = delta(before, await counters(), /./);
  const conflicts = [...d].filter(([k]) => k.endsWith(' 409')).reduce((a, [, v]) => a + v, 0);
  const ips = runs
    .filter((r) => r.status === 0)
    .map((r) => JSON.stringify((JSON.parse(r.stdout) as { ips: unknown[] }).ips[0]));
  await Promise.all(ids.map((id) => timed(ipam.bin, cniEnv('DEL', id), netconf(ipam))));
  return { wallMs, failures: runs.length - ips.length, distinct: new Set(ips).size, conflicts };
}

async function startup() {
  const version = [];
  const empty = [];
  for (let i = 0; i < 60; i++) {
    version.push((await timed(blockipam, { CNI_COMMAND: 'VERSION' }, '{"cniVersion":"1.1.0"}')).ms);
    empty.push((await timed(process.execPath, { PATH: process.env.PATH }, '')).ms);
  }
  return { version, empty };
}

const megabytes = (path: string): number =>
  Math.round(Number(spawnSync('stat', ['-c', '%s', path], { encoding: 'utf8' }).stdout) / 1e6);

/** Per-ADD and per-DEL request counts blockipam logged itself (apiRequests − annotationReads). */
function selfCounted(): { add: number[]; annotation: number[]; del: number[] } {
  const lines = readFileSync(bipamLog, 'utf8')
    .split('\n')
    .filter((l) => l.includes('"msg":"done"') && /"containerID":"blockipam-[scq]/.test(l));
  const parsed = lines.map(
    (l) => JSON.parse(l) as { cmd: string; apiRequests: number; annotationReads: number },
  );
  const adds = parsed.filter((p) => p.cmd === 'ADD');
  return {
    add: adds.map((p) => p.apiRequests - p.annotationReads),
    annotation: adds.map((p) => p.annotationReads),
    del: parsed.filter((p) => p.cmd === 'DEL').map((p) => p.apiRequests),
  };
}

/** p50 of `a` / p50 of `b` (ADD or DEL latencies), two decimals; n/a when either is missing. */
function ratio(
  data: Map<string, { add: number[]; del: number[] }>,
  a: string,
  b: string,
  cmd: 'add' | 'del' = 'add',
): string {
  const x = data.get(a)?.[cmd];
  const y = data.get(b)?.[cmd];
  return x && y ? (pct(x, 50) / pct(y, 50)).toFixed(2) : 'n/a';
}

/** "key × n" per request kind, per call. */
const kinds = (m: Map<string, number> | undefined): string =>
  [...(m ?? new Map<string, number>())]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k} × ${(v / COUNT).toFixed(2)}`)
    .join(', ');

/** The "calico-ipam side by side" subsection: same-run ratios and what each call asks the API server. */
function calicoSection(
  seq: Map<string, { add: number[]; del: number[] }>,
  b2b: Map<string, { add: number[]; del: number[] }>,
  bursts: Map<string, { wallMs: number }>,
  counts: Map<string, Awaited<ReturnType<typeof counted>>>,
): string[] {
  const out = ['', '### calico-ipam side by side', ''];
  if (!calico) {
    out.push(
      `calico-ipam was **skipped** in this run: its projectcalico/api source (option \`--calico-api PATH\`) was absent.`,
    );
    return out;
  }
  const delRatio = (data: typeof seq): string => ratio(data, 'blockipam', 'calico', 'del');
  const bb = bursts.get('blockipam')?.wallMs;
  const bc = bursts.get(CALICO_LABEL)?.wallMs;
  out.push(
    `calico-ipam is \`github.com/projectcalico/calico\` ${calico.version} (the only version the Go module proxy serves: a release-v3.28 commit after v3.28.5, so the v3.28 line), built by \`test/bench/plugin-build-calico.sh\` with projectcalico/api at release-v3.28 (b73eae26) from the tarball given by \`--calico-api\`; Kubernetes datastore on the same API server, its CRDs from the module zip, an IPPool of /26 blocks (ipipMode and vxlanMode Never, nodeSelector \`all()\`), one Node object, a per-node \`ipam_lock_file\`, \`log_level\` info to a file.`,
    '',
    `Same-run ratios blockipam / calico-ipam (below 1 = blockipam faster): ADD p50 spaced ${ratio(seq, 'blockipam', 'calico')}, back to back ${ratio(b2b, 'blockipam', 'calico')}; DEL p50 spaced ${delRatio(seq)}, back to back ${delRatio(b2b)}; ${BURST}-ADD burst wall time ${bb && bc ? (bb / bc).toFixed(2) : 'n/a'}.`,
    '',
    'API requests per call by kind (`group/resource verb code`, mean over the counted calls):',
    '',
  );
  for (const label of ['blockipam', 'whereabouts', 'calico']) {
    const c = counts.get(label);
    const name = ipams.find((i) => i.label === label)?.name ?? label;
    if (c) out.push(`- ${name}: ADD ${kinds(c.addKinds)}; DEL ${kinds(c.delKinds)}`);
  }
  return out;
}

/** `--burst-only`: the burst of each peer, printed (docs untouched) — for a quick same-run check. */
async function burstOnly(): Promise<void> {
  for (const ipam of ipams.filter((i) => ['blockipam', 'whereabouts', 'calico'].includes(i.label))) {
    for (let i = 0; i < WARMUP; i++)
      await timed(ipam.bin, cniEnv('ADD', `${ipam.label}-w${i}`), netconf(ipam));
    const b = await burst(ipam);
    console.log(
      `${ipam.name}: ${BURST} parallel ADDs ${b.wallMs} ms, failed ${b.failures}, distinct ${b.distinct}, 409 ${b.conflicts}`,
    );
  }
  const calls = readBlockipamLogs([bipamLog]).filter((c) => c.cmd === 'ADD' && /-b\d+$/.test(c.containerID));
  const p50 = (xs: (number | undefined)[]): string =>
    fmt(
      pct(
        xs.filter((x) => x !== undefined),
        50,
      ),
    );
  console.log(
    `blockipam burst, p50 per ADD: start-up ${p50(calls.map((c) => c.startMs))} ms, total ${p50(calls.map((c) => c.totalMs))} ms, lock wait ${p50(calls.map((c) => c.lockWaitMs))} ms, lock held ${p50(calls.map((c) => c.heldMs))} ms, requests ${p50(calls.map((c) => c.apiRequests))}; sum of holds ${calls.reduce((a, c) => a + (c.heldMs ?? 0), 0)} ms`,
  );
  console.log(
    `load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' / ')}`,
  );
}

async function main(): Promise<void> {
  if (argv.includes('--burst-only')) return burstOnly();
  const s = await startup();
  const counts = new Map<string, Awaited<ReturnType<typeof counted>>>();
  for (const ipam of ipams) counts.set(ipam.label, await counted(ipam));
  const seq = await interleaved(ipams);
  const b2b = new Map<string, Awaited<ReturnType<typeof backToBack>>>();
  for (const ipam of ipams) b2b.set(ipam.label, await backToBack(ipam));
  const bursts = new Map<string, Awaited<ReturnType<typeof burst>>>();
  for (const ipam of ipams.filter((i) => ['blockipam', 'whereabouts', 'calico'].includes(i.label)))
    bursts.set(ipam.name, await burst(ipam));
  const self = selfCounted();
  const lines: string[] = [
    '## CNI plugin',
    '',
    `Measured by \`node test/bench/plugin-bench.ts\` on ${new Date().toISOString().slice(0, 10)}: 2 cores, kube-apiserver ${cp.serverVersion} + etcd on loopback, Node ${process.version}; load average at the start ${loadavg()[0]?.toFixed(1)}.`,
    "Each IPAM binary is exec'd directly with the environment and stdin ptp would pass (cniVersion 1.0.0, CNI_ARGS with the five K8S_POD_* keys); times are spawn-to-exit wall clock.",
    `Per IPAM, ${WARMUP} warm-up ADDs, then ${COUNT} ADDs and their DELs alone to count API requests (kube-apiserver's own \`apiserver_request_total\`, delta per phase / calls). Latency: ${RUNS} ADDs then their DELs per IPAM, spaced and back to back (below).`,
    '',
    '### Start-up (VERSION, standalone executable)',
    '',
    '| binary | p50 ms | p99 ms |',
    '|---|---|---|',
    `| blockipam (Bun executable, ${megabytes(blockipam)} MB) | ${fmt(pct(s.version, 50))} | ${fmt(pct(s.version, 99))} |`,
    `| empty \`node\` process (floor) | ${fmt(pct(s.empty, 50))} | ${fmt(pct(s.empty, 99))} |`,
    '',
    '### ADD and DEL latency, one node',
    '',
    '*Spaced*: the IPAMs take turns, so consecutive calls of one IPAM are ~100 ms apart. *Back to back*: one IPAM alone, each call starting when the previous one ended (a node starting pods one after another).',
    '',
    '| IPAM | calls | ADD p50 ms | ADD p99 ms | DEL p50 ms | DEL p99 ms | API requests / ADD | API requests / DEL | failures |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const [mode, data] of [
    ['spaced', seq],
    ['back to back', b2b],
  ] as const) {
    for (const ipam of ipams) {
      const r = data.get(ipam.label);
      const c = counts.get(ipam.label);
      if (!r || !c) continue;
      const req = (n: number): string => (ipam.api ? n.toFixed(2) : '0 (files)');
      lines.push(
        `| ${ipam.name} | ${mode} | ${fmt(pct(r.add, 50))} | ${fmt(pct(r.add, 99))} | ${fmt(pct(r.del, 50))} | ${fmt(pct(r.del, 99))} | ${req(c.add)} | ${req(c.del)} | ${r.failures} |`,
      );
    }
  }
  lines.push(
    '',
    `ADD p50 ratio blockipam / whereabouts, same run: spaced ${ratio(seq, 'blockipam', 'whereabouts')}, back to back ${ratio(b2b, 'blockipam', 'whereabouts')} (below 1 = blockipam faster).`,
  );
  lines.push(...calicoSection(seq, b2b, bursts, counts));
  lines.push(
    '',
    `### Burst: ${BURST} parallel ADDs on one node`,
    '',
    '| IPAM | wall time ms | failed | distinct addresses | 409 conflicts |',
    '|---|---|---|---|---|',
  );
  for (const [label, b] of bursts)
    lines.push(`| ${label} | ${b.wallMs} | ${b.failures} | ${b.distinct} | ${b.conflicts} |`);
  lines.push(
    '',
    "### blockipam API requests, as it counts them itself (its log's `done` lines)",
    '',
    `- ADD, not counting the pod + namespace GETs the annotations need: p50 ${pct(self.add, 50)}, max ${Math.max(...self.add)} (the first ADD of the run also claims a block).`,
    `- Annotation reads per ADD (pod GET + namespace GET, only when CNI_ARGS names the pod): ${pct(self.annotation, 50)}.`,
    `- DEL: p50 ${pct(self.del, 50)} (1 LIST of the node's blocks + 1 UPDATE).`,
  );
  const section = lines.join('\n');
  console.log(section);
  if (argv.includes('--write-docs')) await writeDocSection('## CNI plugin', section);
}

try {
  await main();
} finally {
  kubectl(['delete', 'ippools.ipam.blockipam.io', 'bench-v4', '--ignore-not-found']);
  kubectl(['delete', 'ipamblocks.ipam.blockipam.io', '--all']);
  cleanupWhereabouts();
  if (calico) cleanupCalico();
  kubectl(['delete', 'node', 'bench-calico-node', '--ignore-not-found']);
  rmSync(tmp, { recursive: true, force: true });
}
