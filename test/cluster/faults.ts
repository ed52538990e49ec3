/**
 * Helpers of agent-faults.int.test.ts: the node agent's process (found through the node's
 * containerd, killed by PID), the plugin's and the kubelet's logs on a node read from an offset,
 * a standalone plugin run on a node, and the allocation ledger a scenario ends on — every Running
 * pod's address allocated exactly once, to its UID, and no address twice.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { TestContext } from 'node:test';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cluster, inNode, kubectlOk } from '../helpers/cluster.ts';
import { addressOf, allocations, pods, waitFor } from './blockipam.ts';
import type { Allocation, PodObject } from './blockipam.ts';
import { NAMESPACE, pluginLogOf } from './chart.ts';

interface AgentPodObject {
  metadata: { name: string; uid: string };
  spec: { nodeName?: string };
  status: {
    containerStatuses?: {
      name: string;
      containerID?: string;
      ready: boolean;
      restartCount: number;
      state?: { running?: { startedAt: string } };
    }[];
  };
}

/** The agent's pod on `node`, its container's ID, restart count and readiness. */
export function agentOn(node: string): {
  pod: string;
  uid: string;
  containerID: string;
  restarts: number;
  ready: boolean;
  startedAt?: string;
} {
  const list = JSON.parse(
    kubectlOk([
      '-n',
      NAMESPACE,
      'get',
      'pods',
      '-l',
      'app.kubernetes.io/component=agent',
      '--field-selector',
      `spec.nodeName=${node}`,
      '-o',
      'json',
    ]),
  ) as { items: AgentPodObject[] };
  const [pod, ...more] = list.items;
  assert.ok(pod && more.length === 0, `one agent pod on ${node}, found ${list.items.length}`);
  const c = pod.status.containerStatuses?.find((s) => s.name === 'agent');
  return {
    pod: pod.metadata.name,
    uid: pod.metadata.uid,
    containerID: (c?.containerID ?? '').replace(/^containerd:\/\//, ''),
    restarts: c?.restartCount ?? 0,
    ready: c?.ready ?? false,
    ...(c?.state?.running ? { startedAt: c.state.running.startedAt } : {}),
  };
}

/**
 * SIGKILLs the agent's process on `node`: its PID from the node's containerd (`ctr task ls`),
 * checked to be the agent executable before the signal.
 * @returns the PID killed and the restart count before
 */
export function killAgent(node: string): { pid: number; restarts: number } {
  const restarts = agentOn(node).restarts;
  const pid = agentPid(node);
  const r = inNode(node, 'kill', ['-KILL', String(pid)]);
  assert.equal(r.status, 0, r.stderr);
  return { pid, restarts };
}

/** The agent's PID on `node`: from the node's containerd (`ctr task ls`), checked to be the agent. */
function agentPid(node: string): number {
  const agent = agentOn(node);
  assert.ok(agent.containerID, `${node}: the agent container has an ID`);
  const tasks = inNode(node, 'sh', ['-c', 'ctr --address "$CONTAINERD" -n k8s.io task ls']);
  assert.equal(tasks.status, 0, tasks.stderr);
  const line = tasks.stdout.split('\n').find((l) => l.startsWith(agent.containerID));
  const pid = Number(line?.trim().split(/\s+/)[1]);
  assert.ok(pid > 1, `${node}: the agent's task in \`ctr task ls\`: ${line ?? tasks.stdout}`);
  const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  assert.match(cmdline, /blockipam-agent/, `PID ${pid} is the agent`);
  return pid;
}

/** Waits until the agent on `node` restarted (count above `restarts`) and is Ready again. */
export function agentBack(node: string, restarts: number, timeoutMs = 180_000): Promise<true> {
  return waitFor(
    `the agent on ${node} restarted and Ready`,
    () => {
      const a = agentOn(node);
      return a.restarts > restarts && a.ready ? true : undefined;
    },
    timeoutMs,
  );
}

/** A file's size now: where a later {@link readFrom} starts. 0 when it does not exist yet. */
export function sizeOf(path: string): number {
  return existsSync(path) ? statSync(path).size : 0;
}

/** A file's text from byte `offset` on. */
export function readFrom(path: string, offset: number): string {
  return existsSync(path) ? readFileSync(path).subarray(offset).toString('utf8') : '';
}

export const kubeletLogOf = (node: string): string => `${cluster().runDir}/logs/kubelet-${node}.log`;

/** One line of the plugin's JSON-lines log. */
export interface PluginLine {
  time: string;
  level: string;
  msg: string;
  cmd?: string;
  path?: string;
  containerID?: string;
  code?: number;
  details?: string;
}

export function pluginLines(node: string, offset: number): PluginLine[] {
  return readFrom(pluginLogOf(node), offset)
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as PluginLine);
}

/**
 * The plugin's calls on `node` since `offset`: `done` per command and path, and the failures
 * (`CMD code: message`) — what a scenario reports.
 */
export function pluginSummary(node: string, offset: number): { done: string; failed: string[] } {
  const lines = pluginLines(node, offset);
  const done = new Map<string, number>();
  for (const l of lines.filter((x) => x.msg === 'done' && x.cmd !== 'STATUS')) {
    const key = `${l.cmd} ${l.path ?? '?'}`;
    done.set(key, (done.get(key) ?? 0) + 1);
  }
  const failed = new Map<string, number>();
  for (const l of lines.filter((x) => x.level === 'error')) {
    const key = `${l.cmd} ${l.code}: ${l.msg}${l.path ? ` (${l.path})` : ''}`;
    failed.set(key, (failed.get(key) ?? 0) + 1);
  }
  const fmt = (m: Map<string, number>): string[] => [...m].map(([k, n]) => `${n}× ${k}`);
  return { done: fmt(done).join(', ') || 'none', failed: fmt(failed) };
}

/** Lines of the kubelet's log on `node` since `offset` that say the runtime's network is not ready. */
export function networkNotReady(node: string, offset: number): string[] {
  return readFrom(kubeletLogOf(node), offset)
    .split('\n')
    .filter((l) => /NetworkReady=false|NetworkPluginNotReady|network not ready/.test(l));
}

/**
 * The ledger of namespace `ns`: asserts no address is allocated twice anywhere, every Running pod
 * of `ns` holds exactly one allocation — its address, its UID, its node — and no allocation of
 * `ns` belongs to no live pod.
 * @returns the pods' addresses
 */
export function assertLedger(ns: string, running: readonly PodObject[]): string[] {
  const all = allocations();
  const addresses = all.map(addressOf);
  const twice = addresses.filter((a, i) => addresses.indexOf(a) !== i);
  assert.deepEqual(twice, [], 'no address allocated twice');
  const mine = all.filter((a) => a.namespace === ns);
  const byUid = new Map<string, Allocation[]>();
  for (const a of mine) byUid.set(a.podUID ?? '', [...(byUid.get(a.podUID ?? '') ?? []), a]);
  for (const p of running) {
    const held = byUid.get(p.metadata.uid) ?? [];
    assert.equal(
      held.length,
      1,
      `${p.metadata.name} (${p.metadata.uid}) holds one allocation: ${held.length}`,
    );
    assert.equal(addressOf(held[0] as Allocation), p.status.podIP, `${p.metadata.name}'s address`);
    assert.equal(held[0]?.node, p.spec.nodeName, `${p.metadata.name}'s allocation names its node`);
  }
  const live = new Set(pods(ns).map((p) => p.metadata.uid));
  const orphans = mine.filter((a) => !live.has(a.podUID ?? ''));
  assert.deepEqual(
    orphans.map((a) => `${addressOf(a)} ${a.pod}`),
    [],
    'no allocation of a pod that is gone',
  );
  return running.map((p) => p.status.podIP ?? '');
}

/** The network name of the conflist the agent installed on `node` (the handles' prefix). */
export function networkName(node: string): string {
  const file = join(cluster().runDir, node, 'cni', 'net.d', '10-blockipam.conflist');
  return (JSON.parse(readFileSync(file, 'utf8')) as { name: string }).name;
}

/** One standalone plugin call's result: the container ID, its exit status and stdout. */
export interface PluginRun {
  readonly containerID: string;
  readonly rc: number;
  readonly stdout: string;
}

/**
 * Runs the node's installed plugin executable (`<cni bin>/blockipam`) `count` times at once on
 * `node`, with the agent's conflist entry but `ipam.mode` = `mode` (default "standalone": the
 * direct path, no connect()), CNI_COMMAND `command`, container IDs `<prefix>-<i>`, ifname eth0,
 * a netns path that is never opened (an IPAM plugin alone does not enter it), no pod in CNI_ARGS.
 * @returns each call's exit status and stdout, once all have ended
 */
export function standalonePlugin(
  node: string,
  command: 'ADD' | 'DEL',
  prefix: string,
  count: number,
  mode: 'standalone' | 'agent' = 'standalone',
): Promise<PluginRun[]> {
  const c = cluster();
  const dir = join(c.runDir, node, 'faults-standalone', `${command}-${prefix}`);
  mkdirSync(dir, { recursive: true });
  const conflist = JSON.parse(
    readFileSync(join(c.runDir, node, 'cni', 'net.d', '10-blockipam.conflist'), 'utf8'),
  ) as { cniVersion: string; name: string; plugins: { ipam: Record<string, unknown> }[] };
  const [ptp] = conflist.plugins;
  assert.ok(ptp, 'the conflist has the ptp entry');
  const netconf = {
    cniVersion: conflist.cniVersion,
    name: conflist.name,
    ...ptp,
    ipam: { ...ptp.ipam, mode },
  };
  writeFileSync(join(dir, 'netconf.json'), JSON.stringify(netconf));
  const bin = join(c.runDir, node, 'cni', 'bin');
  const script = [
    `cd ${dir}`,
    `for i in $(seq 1 ${count}); do`,
    `  ( CNI_COMMAND=${command} CNI_CONTAINERID=${prefix}-$i CNI_NETNS=/var/run/netns/${prefix}-$i CNI_IFNAME=eth0 CNI_PATH=${bin} ${bin}/blockipam <netconf.json >out.$i 2>err.$i; echo $? >rc.$i ) &`,
    'done',
    'wait',
  ].join('\n');
  return new Promise((resolve, reject) => {
    const run = spawn(
      'bash',
      [join(import.meta.dirname, 'ctl.sh'), c.runDir, 'exec', node, 'sh', '-c', script],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let err = '';
    run.stderr.on('data', (d: Buffer) => (err += d.toString()));
    run.on('error', reject);
    run.on('close', (status) => {
      if (status !== 0) return reject(new Error(`${node}: standalone ${command} runs: ${err}`));
      const out: PluginRun[] = [];
      for (let i = 1; i <= count; i++)
        out.push({
          containerID: `${prefix}-${i}`,
          rc: Number(readFileSync(join(dir, `rc.${i}`), 'utf8').trim()),
          stdout: readFileSync(join(dir, `out.${i}`), 'utf8'),
        });
      resolve(out);
    });
  });
}

/**
 * The kubelet's CNI failure events of `app`'s pods in `ns` since `sinceMs`, reason → count
 * (FailedCreatePodSandBox, FailedKillPod and any other reason naming a sandbox).
 */
export function sandboxEvents(ns: string, app: string, sinceMs: number): Map<string, number> {
  const list = JSON.parse(kubectlOk(['-n', ns, 'get', 'events', '-o', 'json'])) as {
    items: {
      reason: string;
      count?: number;
      lastTimestamp?: string;
      eventTime?: string;
      involvedObject: { name: string };
    }[];
  };
  const out = new Map<string, number>();
  for (const e of list.items) {
    if (!e.involvedObject.name.startsWith(`${app}-`) || !/sandbox|KillPod/i.test(e.reason)) continue;
    if (Date.parse(e.lastTimestamp ?? e.eventTime ?? '') < sinceMs - 1000) continue;
    out.set(e.reason, (out.get(e.reason) ?? 0) + (e.count ?? 1));
  }
  return out;
}

/** Where a scenario's reading of `node`'s plugin and kubelet logs starts. */
export const logOffsets = (node: string): { plugin: number; kubelet: number } => ({
  plugin: sizeOf(pluginLogOf(node)),
  kubelet: sizeOf(kubeletLogOf(node)),
});

/** Seconds since `fromMs`, for diagnostics ("4.2 s"). */
export const secs = (fromMs: number): string => `${((Date.now() - fromMs) / 1000).toFixed(1)} s`;

/**
 * Reports (test diagnostics) what the plugin on `node` did since `offsets`, the sandbox events
 * of `app` in `ns` and the kubelet's "network not ready" lines.
 * @returns the plugin's failures (`N× CMD code: message`) and the sandbox events (`N× reason`)
 */
export function report(
  t: TestContext,
  ns: string,
  node: string,
  offsets: { plugin: number; kubelet: number },
  app: string,
  sinceMs: number,
): { failed: string[]; events: string[] } {
  const s = pluginSummary(node, offsets.plugin);
  const events = [...sandboxEvents(ns, app, sinceMs)].map(([r, n]) => `${n}× ${r}`);
  t.diagnostic(`${node} plugin calls: ${s.done}`);
  t.diagnostic(`${node} plugin failures: ${s.failed.join('; ') || 'none'}`);
  t.diagnostic(`${app} sandbox events: ${events.join(', ') || 'none'}`);
  const notReady = networkNotReady(node, offsets.kubelet);
  t.diagnostic(
    `${node} kubelet "network not ready" lines: ${notReady.length}${notReady[0] ? `; first: ${notReady[0].slice(0, 400)}` : ''}`,
  );
  return { failed: s.failed, events };
}

/** `kubectl` run in the background (for a command that blocks, as `rollout status`). */
export function kubectlAsync(args: readonly string[]): Promise<{ status: number; out: string }> {
  const c = cluster();
  return new Promise((resolve) => {
    const child = spawn(`${c.bin}/kubectl`, ['--kubeconfig', c.kubeconfig, ...args]);
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('close', (status) => resolve({ status: status ?? -1, out }));
  });
}

/** The IPAMBlocks whose affinity is `node`: name → allocation count. */
export function affineBlocks(node: string): Map<string, number> {
  const list = JSON.parse(kubectlOk(['get', 'ipamblocks', '-o', 'json'])) as {
    items: { metadata: { name: string }; spec: { affinity: string | null; allocations: object } }[];
  };
  return new Map(
    list.items
      .filter((b) => b.spec.affinity === node)
      .map((b) => [b.metadata.name, Object.keys(b.spec.allocations).length]),
  );
}

/**
 * Sends `signal` (STOP or CONT) to the agent's process on `node` (its PID from the node's
 * containerd, checked to be the agent executable).
 * @returns the PID signalled
 */
export function signalAgent(node: string, signal: 'STOP' | 'CONT'): number {
  const pid = agentPid(node);
  const r = inNode(node, 'kill', [`-${signal}`, String(pid)]);
  assert.equal(r.status, 0, r.stderr);
  return pid;
}
