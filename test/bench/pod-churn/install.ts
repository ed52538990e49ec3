/**
 * How the pod-churn benchmark installs blockipam for its run, and removes it afterwards, so that
 * host-local's run has neither its agents nor its controller beside it.
 *
 * - `chart` (the default): what an operator runs — `helm install` (Helm 4) of charts/blockipam
 *   with the image built by scripts/build-image.sh and imported into every node; the agent
 *   DaemonSet installs the plugin, writes the conflist, serves the node's IPAM and programs routes;
 *   the controller Deployment (2 replicas, leader election) runs beside it. Removed by
 *   `helm uninstall`, then the IPAM objects and what the agents left on the nodes.
 * - `script`: test/cluster/install-blockipam.sh's plugin and conflist (written by network.ts)
 *   with one node agent per node as a host process (no routes, no controller) — the set-up of
 *   the runs before the chart existed, kept to compare with them.
 */
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  helm,
  installWithPluginLog,
  NAMESPACE,
  PREFIX,
  pluginLogOf,
  RELEASE,
  setUpChart,
  tearDownChart,
  waitRolledOut,
} from '../../cluster/chart.ts';
import { kubectl, type Cluster } from '../../helpers/cluster.ts';
import { percentile } from '../cost-curves/common.ts';
import type { DoneLine } from './breakdown.ts';
import { POD_MTU, startAgents } from './network.ts';

export type InstallMode = 'chart' | 'script';

interface PluginLine extends DoneLine {
  level?: string;
  code?: number;
  /** Which path served the call: through the node agent's socket, or the direct path. */
  path?: 'agent' | 'direct';
  lockWaitMs?: number;
  lockHeldMs?: number;
  /** CPU of the whole call, user + system, ms. */
  cpuMs?: number;
}

/** Every line of the plugin's logs on the nodes (the chart's plugin.logFile; script mode's blockipam.log). */
export function pluginLog(c: Cluster): PluginLine[] {
  const lines: PluginLine[] = [];
  for (const node of c.nodes)
    for (const file of [pluginLogOf(node), join(c.runDir, node, 'log', 'blockipam.log')])
      if (existsSync(file))
        for (const text of readFileSync(file, 'utf8').split('\n'))
          if (text) lines.push(JSON.parse(text) as PluginLine);
  return lines;
}

/**
 * The plugin's own account of the run, from its log files on the nodes (the chart's
 * plugin.logFile; script mode's per-node blockipam.log): calls per command, failures per
 * command, CNI code and message, and of the ADDs and the DELs the whole call's time p50 and p99
 * (nearest rank), mean CPU (ms), how many the agent served, and — when the direct path served any
 * — its host lock's wait and hold p50 and p99, ms. One line; "" when there is no log.
 */
export function pluginLogFigures(c: Cluster): string {
  const lines = pluginLog(c);
  if (lines.length === 0) return '';
  const count = (into: Record<string, number>, key: string): void => void (into[key] = (into[key] ?? 0) + 1);
  const done: Record<string, number> = {};
  const failed: Record<string, number> = {};
  for (const l of lines)
    if (l.msg === 'done') count(done, l.cmd ?? '?');
    else if (l.level === 'error') count(failed, `${l.cmd ?? '?'} ${l.code ?? '?'} ${l.msg ?? ''}`);
  const figures = (cmd: string): string => {
    const calls = lines.filter((l) => l.msg === 'done' && l.cmd === cmd);
    if (calls.length === 0) return '';
    const ms = (key: 'lockWaitMs' | 'lockHeldMs' | 'cpuMs'): number[] =>
      calls.flatMap((l) => (typeof l[key] === 'number' ? [l[key]] : []));
    const [wait, held, cpu] = [ms('lockWaitMs'), ms('lockHeldMs'), ms('cpuMs')];
    const total = calls.flatMap((l) => {
      const whole = l.durationMs ?? l.totalMs; // the forwarder's, the direct path's
      return whole === undefined ? [] : [whole];
    });
    // the direct path logs its CPU; the forwarder does not (its share is in the breakdown's CNI column)
    const cpuMean = cpu.length
      ? `, CPU ${(cpu.reduce((a, b) => a + b, 0) / cpu.length).toFixed(1)} ms mean`
      : '';
    const viaAgent = calls.filter((l) => l.path === 'agent').length;
    const lock = wait.length
      ? `, direct path's lock wait p50 ${percentile(wait, 50)} / p99 ${percentile(wait, 99)} ms, held p50 ${percentile(held, 50)} / p99 ${percentile(held, 99)} ms`
      : '';
    return `${cmd} whole call p50 ${percentile(total, 50)} / p99 ${percentile(total, 99)} ms${cpuMean}, ${calls.length} calls, ${viaAgent} served by the agent${lock}`;
  };
  return `the plugin's log (all phases, ${c.nodes.length} nodes): calls done ${JSON.stringify(done)}, failed ${JSON.stringify(failed)}; ${[figures('ADD'), figures('DEL')].filter(Boolean).join('; ')}`;
}

/** blockipam installed for one run. */
export interface Installed {
  /** One sentence for the report: what ran beside the plugin. */
  readonly describe: string;
  /** Removes it (idempotent). */
  stop(): Promise<void>;
}

async function waitFor(what: string, test: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

/** Where a profiling agent writes its CPU profile, on its node (the node's /var/log is c.runDir/NODE/log). */
const PROFILE_DIR = '/var/log/agent-profile';

/**
 * Makes every agent write a CPU profile when it exits (Bun's `--cpu-prof` through BUN_OPTIONS, into
 * {@link PROFILE_DIR} on its node, a hostPath): a patch of the installed DaemonSet, so its pods roll.
 */
function profileAgents(): void {
  const patch = [
    {
      op: 'add',
      path: '/spec/template/spec/volumes/-',
      value: { name: 'agent-profile', hostPath: { path: PROFILE_DIR, type: 'DirectoryOrCreate' } },
    },
    {
      op: 'add',
      path: '/spec/template/spec/containers/0/volumeMounts/-',
      value: { name: 'agent-profile', mountPath: PROFILE_DIR },
    },
    {
      op: 'add',
      path: '/spec/template/spec/containers/0/env/-',
      value: { name: 'BUN_OPTIONS', value: `--cpu-prof --cpu-prof-dir=${PROFILE_DIR}` },
    },
  ];
  const r = kubectl([
    '-n',
    NAMESPACE,
    'patch',
    `daemonset/${PREFIX}-agent`,
    '--type=json',
    '-p',
    JSON.stringify(patch),
  ]);
  if (r.status !== 0) throw new Error(`patching the agent DaemonSet for profiles: ${r.stderr}`);
}

/** Copies the logs of blockipam's pods (the agents', the controllers') from every node into `into`/logs. */
function collectLogs(c: Cluster, into: string): void {
  for (const node of c.nodes) {
    const pods = join(c.runDir, node, 'pod-logs');
    for (const pod of existsSync(pods) ? readdirSync(pods) : [])
      if (pod.startsWith(`${NAMESPACE}_${PREFIX}-`))
        cpSync(join(pods, pod), join(into, 'logs', `${node}-${pod}`), { recursive: true });
  }
}

/** Copies the agents' CPU profiles (written when they exited) from every node into `into`. */
function collectProfiles(c: Cluster, into: string, log: (text: string) => void): void {
  mkdirSync(into, { recursive: true });
  for (const node of c.nodes) {
    const dir = join(c.runDir, node, 'log', 'agent-profile');
    if (existsSync(dir))
      for (const file of readdirSync(dir)) copyFileSync(join(dir, file), join(into, `${node}-${file}`));
  }
  log(`agent profiles and logs: ${readdirSync(into).join(', ') || 'none'} in ${into}`);
}

async function installChart(
  c: Cluster,
  log: (text: string) => void,
  profileInto?: string,
): Promise<Installed> {
  log('chart: building (or reusing) the image and importing it into every node');
  const image = setUpChart();
  log(`chart: helm install ${RELEASE} (image ${image.ref})`);
  installWithPluginLog(image, { set: [`cni.mtu=${POD_MTU}`] });
  if (profileInto !== undefined) profileAgents();
  const stop = async (): Promise<void> => {
    if (profileInto !== undefined) collectLogs(c, profileInto); // before the kubelets remove them
    helm(4, ['uninstall', RELEASE, '--namespace', NAMESPACE]);
    // the agents must be gone before their files are: a running one writes them again
    await waitFor(
      'the agent and controller pods to be gone',
      () =>
        kubectl([
          '-n',
          NAMESPACE,
          'get',
          'pods',
          '-l',
          `app.kubernetes.io/instance=${RELEASE}`,
          '-o',
          'name',
        ]).stdout.trim() === '',
      180_000,
    ).catch((error: unknown) => log(String(error)));
    if (profileInto !== undefined) collectProfiles(c, profileInto, log);
    tearDownChart(); // uninstalled already: the IPAM objects and the nodes' files go
  };
  try {
    waitRolledOut();
    await waitFor(
      "every node's conflist written by its agent",
      () =>
        c.nodes.every((node) => existsSync(join(c.runDir, node, 'cni', 'net.d', '10-blockipam.conflist'))),
      120_000,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    describe: `installed by the chart (\`helm install\`, Helm 4): the agent DaemonSet (${c.nodes.length} pods: plugin, conflist, IPAM server, routes) and the controller Deployment (2 replicas)`,
    stop,
  };
}

/** Installs blockipam the given way; resolves when the plugin can be called on every node. */
export async function installBlockipamFor(
  mode: InstallMode,
  c: Cluster,
  repoRoot: string,
  log: (text: string) => void,
  profileInto?: string,
): Promise<Installed> {
  if (mode === 'chart') return installChart(c, log, profileInto);
  const agents = startAgents(c, repoRoot);
  return {
    describe: `installed by test/cluster/install-blockipam.sh, a node agent per node as a host process (pids ${agents.pids.join(', ')}; no routes, no controller)`,
    stop: () => agents.stop(),
  };
}
