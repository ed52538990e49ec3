/**
 * IPAM churn at cluster scale on simulated nodes (issue 13 item 2; not a test). One run, one API
 * server, side by side: blockipam (a real node agent per node, churn-agents.ts; the plugin —
 * the native forwarder with the Bun executable beside it, as the agent installs them —
 * forwards every call to its node's agent over the agent's IPAM socket — or, with
 * `--blockipam-mode direct`, takes its direct path while the agents only pre-claim),
 * calico-ipam (Kubernetes datastore, the v3.28 line) and whereabouts v0.9.2.
 *
 * Each node is a network namespace this bench creates, with a churn-relay.ts process in it that
 * relays the API server (through a second one on the host) and a churn-node.ts process that
 * spawns the IPAM as a runtime would (ptp's environment and stdin; the
 * IPAM alone, no interfaces): each node has its own host lock (blockipam's direct path's lock
 * file is in the node's cacheDir; calico-ipam gets a lock file per node; whereabouts takes one
 * cluster-wide Lease). blockipam's agents run in their nodes' namespaces, each with its socket in
 * a directory of its own under the run's temp dir; the phases start once every agent is ready.
 * Phases, per IPAM, interleaved across IPAMs (ADD all of each, then DEL of each, ...):
 *   add (PODS ADDs issued at once on every node) → del (all DELs at once) → re-add (new pods,
 *   new names and UIDs) → del.
 * Pods exist before their ADDs (bound to the IPAM's nodes; created outside the timed window) and are deleted after their DELs.
 * Per phase: wall time (first call issued → last call exited), call p50/p99 (spawn to exit),
 * failures, distinct addresses, API requests and 409s per call (kube-apiserver's
 * apiserver_request_total, filtered per IPAM as plugin-bench.ts does; blockipam's include its
 * agents' requests in the phase), kube-apiserver and etcd CPU seconds (/proc/<pid>/stat).
 *
 * Usage: node test/bench/churn-bench.ts [--nodes N] [--pods N] [--ipams blockipam,calico,whereabouts]
 *          [--blockipam-mode agent|direct] [--calico-api PATH] [--json FILE] [--write-docs]
 *          [--control-plane-nice N] [--keep-logs]
 *   --blockipam-mode: `agent` (default): each node's netconf names its agent's socket
 *     (`ipam.agentSocket`), so every ADD and DEL goes plugin → agent; `direct`: `ipam.mode:
 *     standalone` (host lock, the API server from the plugin process), the agents without a socket.
 *   --control-plane-nice: the nice value of kube-apiserver's, etcd's and the relays' threads (the
 *     relays stand for the network), set before each phase (default -10; 0 leaves them as
 *     started). On a cluster the control plane has its own machines and the network is no
 *     process; here they share 2 cores with the burst, which at nice 0 starves them (a lock
 *     holder's block UPDATE then goes unanswered for 10 s). It applies to every IPAM alike.
 *   Starts its own control plane (unless run under scripts/run-tests.ts' environment). Root.
 *   SIGINT/SIGTERM stop the agents, nodes and relays it started (by PID) and clean up, then exit.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { controlPlane, kubectl } from '../helpers/control-plane.ts';
import { ensurePlugin, forwardedPlugin, repoRoot } from '../plugin/helpers/plugin-exe.ts';
import { delta, option, requestCounters } from './plugin-bench-lib.ts';
import {
  API,
  applyNodes,
  cleanupCalico,
  cleanupWhereabouts,
  DEFAULT_CALICO_API,
  setupCalico,
  setupWhereabouts,
  type PeerIpam,
  must,
} from './peer-ipams.ts';
import { startChurnAgent, type ChurnAgent } from './churn-agents.ts';
import { cpuSeconds } from './proc-stat.ts';
import { reniceProcess, serveApiSocket, startNode, type Relay, type SimNode } from './churn-lib.ts';
import { renderChurn, type ChurnPhase, type ChurnRun } from './churn-report.ts';
import type { NodeCall, NodeResult } from './churn-node.ts';

const argv = process.argv.slice(2);
const NODES = Number(option('--nodes') ?? 10);
const PODS = Number(option('--pods') ?? 100);
const WANT = (option('--ipams') ?? 'blockipam,calico,whereabouts').split(',');
const NS = 'churn';
const CONTROL_PLANE_NICE = Number(option('--control-plane-nice') ?? -10);
const BLOCKIPAM_MODE = (option('--blockipam-mode') ?? 'agent') as 'agent' | 'direct';
const PHASES = ['add', 'del', 're-add', 'del again'] as const;
// Refused before anything starts (a control plane, a build): a typo must not become a run.
for (const [flag, value, min] of [
  ['--nodes', NODES, 1],
  ['--pods', PODS, 1],
] as const)
  if (!Number.isInteger(value) || value < min) {
    console.error(`churn-bench: ${flag} must be an integer ≥ ${min} (got ${option(flag)})`);
    process.exit(2);
  }
if (!['agent', 'direct'].includes(BLOCKIPAM_MODE)) {
  console.error(`churn-bench: --blockipam-mode must be agent or direct (got ${BLOCKIPAM_MODE})`);
  process.exit(2);
}
if (!Number.isInteger(CONTROL_PLANE_NICE) || CONTROL_PLANE_NICE < -20 || CONTROL_PLANE_NICE > 19) {
  console.error(
    `churn-bench: --control-plane-nice must be an integer from -20 to 19 (got ${option('--control-plane-nice')})`,
  );
  process.exit(2);
}
for (const name of WANT)
  if (!['blockipam', 'calico', 'whereabouts'].includes(name)) {
    console.error(`churn-bench: --ipams: unknown IPAM "${name}" (known: blockipam, calico, whereabouts)`);
    process.exit(2);
  }

const cp = controlPlane();
const apiPort = Number(new URL(cp.apiUrl).port);
const pidOf = (file: string): number => Number(readFileSync(join(cp.runDir, file), 'utf8').trim());
const apiserverPid = pidOf('apiserver.pid');
const etcdPid = pidOf('etcd.pid');
const tmp = mkdtempSync(join(tmpdir(), 'bipam-churn-'));
/** Force-deletes the bench's pods matching `selector` (kubectl arguments), without waiting. */
const deletePods = (selector: readonly string[]): void =>
  void kubectl(['delete', 'pods', '-n', NS, ...selector, '--grace-period=0', '--force', '--wait=false']);
const log = (s: string): void => console.error(`[churn] ${new Date().toISOString().slice(11, 19)} ${s}`);

interface Subject {
  readonly label: 'blockipam' | 'calico' | 'whereabouts';
  readonly name: string;
  readonly bin: string;
  readonly nodePrefix: string;
  readonly api: RegExp;
  netconf(node: string): string;
}

const nodeNames = (prefix: string): string[] => Array.from({ length: NODES }, (_, i) => `${prefix}${i + 1}`);
const subjects: Subject[] = [];
const agents: ChurnAgent[] = [];
const sims: SimNode[] = [];
/** The host side of the nodes' route to the API server. */
let apiRelay: Relay | undefined;
/** blockipam node `node`'s agent socket: a directory of its own (the agent makes it root-only). */
const agentSocket = (node: string): string => join(tmp, `${node}-agent`, 'ipam.sock');
/** churn-relay.ts processes: the host side, then one per node (reniceControlPlane). */
const relayPids: number[] = [];
const netconf = (top: Record<string, unknown>, ipam: Record<string, unknown>): string =>
  JSON.stringify({ cniVersion: '1.0.0', name: 'churnnet', type: 'ptp', ...top, ipam });
const peer = (label: 'calico' | 'whereabouts', name: string, p: PeerIpam, prefix: string): Subject => ({
  label,
  name,
  bin: p.bin,
  nodePrefix: prefix,
  api: API[label],
  netconf: (node) => netconf(p.top(node), p.ipam(node)),
});

function setup(): void {
  must(['apply', '-f', join(repoRoot, 'crds')]);
  must(['wait', '--for=condition=Established', '--timeout=60s', 'crd/ipamblocks.ipam.blockipam.io']);
  kubectl(['create', 'namespace', 'kube-system']);
  kubectl(['create', 'namespace', NS]);
  if (WANT.includes('blockipam')) {
    // As the agent installs it: in agent mode the native forwarder as `blockipam` with the Bun
    // executable beside it as `blockipam-direct`; in direct mode the Bun executable itself.
    const bin = BLOCKIPAM_MODE === 'agent' ? forwardedPlugin(join(tmp, 'cni-bin')) : ensurePlugin();
    must(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'ipam.blockipam.io/v1alpha1',
        kind: 'IPPool',
        metadata: { name: 'churn-v4' },
        spec: { cidr: '10.250.0.0/16', blockSize: 26 },
      }),
    );
    subjects.push({
      label: 'blockipam',
      name:
        BLOCKIPAM_MODE === 'agent' ? 'blockipam (agents, IPAM socket)' : 'blockipam (agents, direct path)',
      bin,
      nodePrefix: 'bipam-n',
      api: API.blockipam,
      netconf: (node) =>
        netconf(
          {},
          {
            type: 'blockipam',
            kubeconfig: cp.adminKubeconfig,
            nodeName: node,
            logFile: join(tmp, `${node}.log`),
            logLevel: 'info', // as installed (and as calico-ipam's log_level): the done lines carry the breakdown
            cacheDir: join(tmp, `${node}-cache`),
            ...(BLOCKIPAM_MODE === 'agent' ? { agentSocket: agentSocket(node) } : { mode: 'standalone' }),
          },
        ),
    });
  }
  if (WANT.includes('calico')) {
    const calico = setupCalico(tmp, option('--calico-api') ?? DEFAULT_CALICO_API, '10.251.0.0/16');
    if (calico) subjects.push(peer('calico', 'calico-ipam v3.28 line', calico, 'calico-n'));
  }
  if (WANT.includes('whereabouts'))
    subjects.push(peer('whereabouts', 'whereabouts v0.9.2', setupWhereabouts(tmp, '10.252.0.0/16'), 'wb-n'));
  applyNodes(subjects.flatMap((s) => nodeNames(s.nodePrefix)));
}

/** Creates generation `gen`'s pods of `s` (PODS per node, bound to it); returns their names per node. */
function createPods(s: Subject, gen: number, count = PODS): string[][] {
  const names = nodeNames(s.nodePrefix).map((node) =>
    Array.from({ length: count }, (_, j) => `${s.label}-${node.slice(s.nodePrefix.length)}-g${gen}-p${j}`),
  );
  const items = names.flatMap((pods, i) =>
    pods.map((name) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: NS, labels: { churn: `${s.label}-g${gen}` } },
      spec: { nodeName: `${s.nodePrefix}${i + 1}`, containers: [{ name: 'c', image: 'pause' }] },
    })),
  );
  const file = join(tmp, `pods-${s.label}-${gen}.json`);
  writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
  must(['create', '--validate=false', '-f', file]);
  return names;
}

const uids = new Map<string, string>();
function readUids(s: Subject, gen: number): void {
  const r = kubectl(['get', 'pods', '-n', NS, '-l', `churn=${s.label}-g${gen}`, '-o', 'json']);
  if (r.status !== 0) throw new Error(`kubectl get pods: ${r.stderr}`);
  const list = JSON.parse(r.stdout) as { items: { metadata: { name: string; uid: string } }[] };
  for (const p of list.items) uids.set(p.metadata.name, p.metadata.uid);
}

const callOf = (s: Subject, cmd: 'ADD' | 'DEL', node: string, sim: SimNode, pod: string): NodeCall => ({
  id: `${pod}-${cmd}`,
  bin: s.bin,
  stdin: s.netconf(node),
  env: {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    CNI_COMMAND: cmd,
    CNI_CONTAINERID: pod,
    CNI_NETNS: `/var/run/netns/${sim.podNetns}`,
    CNI_IFNAME: 'eth0',
    CNI_PATH: cp.cniBin,
    CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${NS};K8S_POD_NAME=${pod};K8S_POD_INFRA_CONTAINER_ID=${pod};K8S_POD_UID=${uids.get(pod) ?? ''}`,
  },
});

/**
 * Every thread of kube-apiserver, etcd and the relays that stand for the network (the nodes'
 * and the host's churn-relay.ts) at CONTROL_PLANE_NICE (threads started later inherit it).
 */
function reniceControlPlane(): void {
  if (CONTROL_PLANE_NICE === 0) return;
  for (const pid of [apiserverPid, etcdPid, ...relayPids]) reniceProcess(pid, CONTROL_PLANE_NICE);
}

async function runPhase(s: Subject, phase: (typeof PHASES)[number], pods: string[][]): Promise<ChurnPhase> {
  const cmd = phase.startsWith('del') ? 'DEL' : 'ADD';
  const counters = () => requestCounters(cp.apiUrl, cp.adminToken, cp.caFile);
  const before = await counters();
  const cpuNow = async (): Promise<number[]> => [
    cpuSeconds(apiserverPid),
    cpuSeconds(etcdPid),
    (await Promise.all(sims.map((n) => n.cpu()))).reduce((a, b) => a + b, 0),
    s.label === 'blockipam' ? agents.reduce((a, g) => a + cpuSeconds(g.pid), 0) : 0,
  ];
  reniceControlPlane();
  const cpu0 = await cpuNow();
  const load = loadavg()[0] ?? NaN;
  const startedAtMs = Date.now();
  const t0 = performance.now();
  const results: NodeResult[][] = await Promise.all(
    sims.map((sim, i) => {
      const node = `${s.nodePrefix}${i + 1}`;
      return sim.run((pods[i] ?? []).map((pod) => callOf(s, cmd, node, sim, pod)));
    }),
  );
  const wallMs = performance.now() - t0;
  const cpu1 = await cpuNow();
  const d = delta(before, await counters(), s.api);
  const all = results.flat();
  const ok = all.filter((r) => r.status === 0 && (cmd === 'DEL' || r.stdout.includes('"ips"')));
  const addresses = ok.flatMap((r) =>
    cmd === 'ADD' ? [String((JSON.parse(r.stdout) as { ips: { address: string }[] }).ips[0]?.address)] : [],
  );
  const failed = all.filter((r) => !ok.includes(r));
  return {
    ipam: s.label,
    name: s.name,
    phase,
    cmd,
    calls: all.length,
    loadAtStart: load,
    startedAtMs,
    wallMs,
    ms: all.map((r) => r.ms),
    perNodeWallMs: results.map((rs) => Math.max(0, ...rs.map((r) => r.ms))),
    failures: failed.length,
    failureSamples: [
      ...new Set(failed.map((r) => `${r.status}: ${(r.stdout + r.stderr).slice(0, 300)}`)),
    ].slice(0, 3),
    distinct: new Set(addresses).size,
    requests: [...d].reduce((a, [, v]) => a + v, 0),
    conflicts: [...d].filter(([k]) => k.endsWith(' 409')).reduce((a, [, v]) => a + v, 0),
    kinds: Object.fromEntries(d),
    apiserverCpuS: (cpu1[0] ?? NaN) - (cpu0[0] ?? NaN),
    etcdCpuS: (cpu1[1] ?? NaN) - (cpu0[1] ?? NaN),
    ipamCpuS: (cpu1[2] ?? NaN) - (cpu0[2] ?? NaN),
    agentCpuS: (cpu1[3] ?? NaN) - (cpu0[3] ?? NaN),
    delayed: all.filter((r) => r.delayedMs > 0).length,
    ids: all.map((r) => r.id),
    doneAtMs: ok.map((r) => r.endedAtMs - startedAtMs).sort((a, b) => a - b),
  };
}

/**
 * One agent per blockipam node, in the node's namespace (sims[i] runs node i + 1's calls), with
 * its socket in agent mode; resolves once every one is ready.
 */
async function startAgents(): Promise<void> {
  for (const [i, node] of nodeNames('bipam-n').entries()) {
    mkdirSync(join(tmp, `${node}-cache`), { recursive: true });
    agents.push(
      startChurnAgent({
        node,
        netns: sims[i]?.netns ?? '',
        kubeconfig: cp.adminKubeconfig,
        ...(BLOCKIPAM_MODE === 'agent' ? { socket: agentSocket(node) } : {}),
      }),
    );
  }
  await Promise.all(agents.map((a) => a.ready()));
  log(`${agents.length} agents ready (${BLOCKIPAM_MODE === 'agent' ? 'IPAM sockets' : 'no sockets'})`);
}

let stopping: Promise<void> | undefined;
/** Stops, by PID, every process this run started: agents, nodes, relays. Once; later calls wait for it. */
const stopProcesses = (): Promise<void> =>
  (stopping ??= (async () => {
    await Promise.all(agents.map((a) => a.stop()));
    await Promise.all(sims.map((s) => s.stop()));
    await apiRelay?.stop();
  })());

async function main(): Promise<ChurnRun> {
  setup();
  const socket = join(tmp, 'api.sock');
  apiRelay = await serveApiSocket(socket, '127.0.0.1', apiPort);
  relayPids.push(apiRelay.pid);
  try {
    for (let i = 1; i <= NODES; i++) sims.push(await startNode(`n${i}`, apiPort, socket));
    relayPids.push(...sims.map((n) => n.relay.pid));
    if (subjects.some((s) => s.label === 'blockipam')) await startAgents();
    log(
      `${NODES} nodes × ${PODS} pods; IPAMs: ${subjects.map((s) => s.label).join(', ')}; blockipam mode ${BLOCKIPAM_MODE}; load ${loadavg()[0]?.toFixed(1)}`,
    );
    const phases: ChurnPhase[] = [];
    const warmCpuMs: Record<string, number> = {};
    const pods = new Map<string, string[][]>();
    // Warm-up, outside every window, alike for all: one ADD + DEL per node (blockipam learns the
    // cluster's UID, calico-ipam claims its first block, whereabouts creates its pool object).
    for (const s of subjects) {
      const warm = createPods(s, 0, 1);
      readUids(s, 0);
      const cpu0 = (await Promise.all(sims.map((n) => n.cpu()))).reduce((a, b) => a + b, 0);
      for (const cmd of ['ADD', 'DEL'] as const)
        await Promise.all(
          sims.map((sim, i) =>
            sim.run((warm[i] ?? []).map((pod) => callOf(s, cmd, `${s.nodePrefix}${i + 1}`, sim, pod))),
          ),
        );
      const cpu1 = (await Promise.all(sims.map((n) => n.cpu()))).reduce((a, b) => a + b, 0);
      warmCpuMs[s.label] = ((cpu1 - cpu0) * 1000) / (2 * NODES);
      deletePods(['-l', `churn=${s.label}-g0`]);
    }
    for (const [p, phase] of PHASES.entries()) {
      for (const s of subjects) {
        const gen = p < 2 ? 1 : 2;
        if (phase === 'add' || phase === 're-add') {
          pods.set(s.label, createPods(s, gen));
          readUids(s, gen);
        }
        log(`${s.label} ${phase} …`);
        const r = await runPhase(s, phase, pods.get(s.label) ?? []);
        log(
          `${s.label} ${phase}: ${(r.wallMs / 1000).toFixed(1)} s, ${r.failures} failed, load ${r.loadAtStart.toFixed(1)}`,
        );
        for (const f of r.failureSamples) log(`  failure: ${f}`);
        phases.push(r);
        const partial = option('--json');
        if (partial) writeFileSync(`${partial}.partial`, JSON.stringify({ warmCpuMs, phases }));
        if (phase.startsWith('del')) deletePods(['-l', `churn=${s.label}-g${gen}`]);
      }
    }
    return {
      when: new Date().toISOString(),
      nodes: NODES,
      pods: PODS,
      serverVersion: cp.serverVersion,
      node: process.version,
      logDir: tmp,
      blockipamLogs: nodeNames('bipam-n').map((n) => join(tmp, `${n}.log`)),
      calicoLogs: nodeNames('calico-n').map((n) => join(tmp, `calico-${n}.log`)),
      phases,
      warmCpuMs,
      controlPlaneNice: CONTROL_PLANE_NICE,
      ...(subjects.some((s) => s.label === 'blockipam') ? { blockipamMode: BLOCKIPAM_MODE } : {}),
    };
  } finally {
    await stopProcesses();
  }
}

let cleaned = false;
/** Deletes what the run wrote on the API server and its temp dir (unless --keep-logs). Once. */
function cleanup(): void {
  if (cleaned) return;
  cleaned = true;
  deletePods(['--all']);
  kubectl(['delete', 'ipamblocks.ipam.blockipam.io', '--all']);
  kubectl(['delete', 'ippools.ipam.blockipam.io', 'churn-v4', '--ignore-not-found']);
  cleanupWhereabouts();
  cleanupCalico();
  if (!argv.includes('--keep-logs')) rmSync(tmp, { recursive: true, force: true });
}

// Interrupted: the agents would outlive the run (nothing else ends them), so stop them by PID.
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
] as const)
  process.once(signal, () => {
    log(`${signal}: stopping the agents, nodes and relays`);
    void stopProcesses()
      .catch((e: unknown) => log(`stopping: ${String(e)}`))
      .finally(() => {
        cleanup();
        process.exit(code);
      });
  });

try {
  const run = await main();
  const section = renderChurn(run);
  console.log(section.markdown);
  const json = option('--json');
  if (json) writeFileSync(json, JSON.stringify({ ...run, breakdown: section.breakdown }, null, 1));
  if (argv.includes('--write-docs')) await section.writeDocs(join(repoRoot, 'docs'));
} finally {
  cleanup();
}
