/**
 * blockipam on the test cluster, for the tests in this folder: install (install-blockipam.sh),
 * ipamctl, the IPAMBlocks and their allocations, the CNI calls the runtime made (cni-recorder.sh)
 * and small polling / manifest helpers. Talks to blockipam only from the outside: the plugin
 * executable the runtime runs, ipamctl's CLI and the CRDs.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Report } from '../../cli/audit/report.ts';
import { cluster, kubectl, kubectlOk, type RunResult } from '../helpers/cluster.ts';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..', '..');

/**
 * Installs blockipam on every node (idempotent) and waits until all nodes are Ready.
 * @throws Error with the script's stderr when it fails
 */
export function installBlockipam(cniVersion = '1.1.0'): void {
  const r = spawnSync(
    'bash',
    [join(here, 'install-blockipam.sh'), join(cluster().runDir, 'env'), '--cni-version', cniVersion],
    {
      encoding: 'utf8',
      stdio: ['ignore', 'inherit', 'pipe'],
    },
  );
  if (r.status !== 0) throw new Error(`install-blockipam.sh failed:\n${r.stderr}`);
}

/** Rewrites one node's conflist with another cniVersion (containerd reloads it by itself). */
export function setCniVersion(node: string, cniVersion: string): void {
  const r = spawnSync(
    'bash',
    [
      join(here, 'install-blockipam.sh'),
      join(cluster().runDir, 'env'),
      '--cni-version',
      cniVersion,
      '--node',
      node,
    ],
    { encoding: 'utf8' },
  );
  if (r.status !== 0) throw new Error(`install-blockipam.sh --node ${node} failed:\n${r.stderr}`);
}

/** Runs ipamctl (cli/main.ts under the project's Node) against the cluster as admin. */
export function ipamctl(args: readonly string[]): RunResult {
  const r = spawnSync(
    join(repo, 'node_modules', '.bin', 'node'),
    [join(repo, 'cli', 'main.ts'), '--kubeconfig', cluster().kubeconfig, ...args],
    { encoding: 'utf8', cwd: repo },
  );
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** One allocation of an IPAMBlock, with the block it is in. */
export interface Allocation {
  readonly block: string;
  readonly cidr: string;
  /** The block's affinity: the owning node, or null. */
  readonly affinity: string | null;
  readonly ordinal: number;
  readonly handle: string;
  readonly node: string;
  readonly namespace?: string;
  readonly pod?: string;
  readonly podUID?: string;
}

interface BlockObject {
  metadata: { name: string };
  spec: {
    cidr: string;
    affinity: string | null;
    allocations: Record<string, Omit<Allocation, 'block' | 'cidr' | 'affinity' | 'ordinal'>>;
  };
}

/** Every allocation in every IPAMBlock. */
export function allocations(): Allocation[] {
  const list = JSON.parse(kubectlOk(['get', 'ipamblocks', '-o', 'json'])) as { items: BlockObject[] };
  return list.items.flatMap((b) =>
    Object.entries(b.spec.allocations).map(([ordinal, a]) => ({
      ...a,
      block: b.metadata.name,
      cidr: b.spec.cidr,
      affinity: b.spec.affinity,
      ordinal: Number(ordinal),
    })),
  );
}

/** The address of an allocation (IPv4 blocks: base + ordinal). */
export function addressOf(a: Allocation): string {
  const [base] = a.cidr.split('/');
  const n = (base ?? '').split('.').reduce((acc, o) => acc * 256 + Number(o), 0) + a.ordinal;
  return [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join('.');
}

/** True when `ip` (IPv4) is inside `cidr`. */
export function inCidr(ip: string, cidr: string): boolean {
  const [base, len] = cidr.split('/');
  const num = (s: string): number => s.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
  const size = 2 ** (32 - Number(len));
  return Math.floor(num(ip) / size) === Math.floor(num(base ?? '') / size);
}

/** One CNI call as recorded on a node, in call order. Secrets in the environment are redacted. */
export interface CniCall {
  /** ns since the epoch when the call started */
  readonly at: bigint;
  readonly plugin: string;
  readonly env: Readonly<Record<string, string>>;
  readonly stdin: Record<string, unknown>;
  readonly stdout: string;
  /** exit status; undefined while the call is still running */
  readonly rc?: number;
}

const secretName = /token|secret|password|passwd|credential|key/i;

/** The CNI calls recorded on `node` (optionally of one plugin), oldest first. */
export function cniCalls(node: string, plugin?: string): CniCall[] {
  const dir = join(cluster().runDir, node, 'cni-calls');
  if (!existsSync(dir)) return [];
  const calls: CniCall[] = [];
  for (const f of readdirSync(dir)
    .filter((n) => n.endsWith('.stdin'))
    .sort()) {
    const base = f.slice(0, -'.stdin'.length);
    const name = base.slice(base.indexOf('.') + 1);
    if (plugin !== undefined && name !== plugin) continue;
    const read = (ext: string): string | undefined => {
      const p = join(dir, `${base}.${ext}`);
      return existsSync(p) ? readFileSync(p, 'utf8') : undefined;
    };
    const env: Record<string, string> = {};
    for (const line of (read('env') ?? '').split('\n')) {
      const eq = line.indexOf('=');
      if (eq > 0)
        env[line.slice(0, eq)] = secretName.test(line.slice(0, eq)) ? '<redacted>' : line.slice(eq + 1);
    }
    let stdin: Record<string, unknown>;
    try {
      stdin = JSON.parse(read('stdin') ?? '{}') as Record<string, unknown>;
    } catch {
      stdin = { unparsable: read('stdin') };
    }
    const rc = read('rc');
    calls.push({
      at: BigInt(base.slice(0, base.indexOf('-'))),
      plugin: name,
      env,
      stdin,
      stdout: read('stdout') ?? '',
      ...(rc === undefined ? {} : { rc: Number(rc.trim()) }),
    });
  }
  return calls;
}

/** The value of one K8S_* key of a call's CNI_ARGS. */
export function cniArg(call: CniCall, key: string): string | undefined {
  for (const kv of (call.env.CNI_ARGS ?? '').split(';')) {
    const eq = kv.indexOf('=');
    if (eq > 0 && kv.slice(0, eq) === key) return kv.slice(eq + 1);
  }
  return undefined;
}

/**
 * Polls `probe` every `everyMs` until it returns a value other than undefined.
 * @throws Error naming `what` (and the last probe's note) after `timeoutMs`
 */
export async function waitFor<T>(
  what: string,
  probe: () => T | undefined,
  timeoutMs: number,
  everyMs = 500,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** The pods of a namespace (kubectl JSON, the fields the tests read). */
export interface PodObject {
  metadata: { name: string; uid: string; namespace: string; deletionTimestamp?: string };
  spec: { nodeName?: string };
  status: { phase?: string; podIP?: string; conditions?: { type: string; status: string }[] };
}

export function pods(namespace: string, selector?: string): PodObject[] {
  const args = ['-n', namespace, 'get', 'pods', '-o', 'json', ...(selector ? ['-l', selector] : [])];
  return (JSON.parse(kubectlOk(args)) as { items: PodObject[] }).items;
}

/** The node's Ready condition status ("True", "False", "Unknown"); "" when the Node does not exist. */
export function nodeReady(node: string): string {
  const jsonpath = 'jsonpath={.status.conditions[?(@.type=="Ready")].status}';
  const r = kubectl(['get', 'node', node, '--ignore-not-found', '-o', jsonpath]);
  if (r.status !== 0) throw new Error(`kubectl get node ${node} failed: ${r.stderr}`);
  return r.stdout.trim();
}

/**
 * Samples every node's conflist and Ready condition until `stop`: what it saw missing, by node
 * ("node-1: conflist", "node-1: NotReady (<status>: <reason>: <message>)").
 */
export function watchNodes(): { stop(): Promise<string[]> } {
  const lost = new Set<string>();
  let running = true;
  const loop = (async () => {
    while (running) {
      for (const node of cluster().nodes) {
        if (!existsSync(`${cluster().runDir}/${node}/cni/net.d/10-blockipam.conflist`))
          lost.add(`${node}: conflist`);
        if (nodeReady(node) !== 'True') lost.add(`${node}: NotReady (${readyCondition(node)})`);
      }
      // sampling pace (not a wait for a condition): leaves the 2 cores to the cluster
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return [...lost];
    },
  };
}

/** The Ready condition's status, reason and message, for a failure message. */
function readyCondition(node: string): string {
  const jsonpath = '{range .status.conditions[?(@.type=="Ready")]}{.status}: {.reason}: {.message}{end}';
  return kubectl(['get', 'node', node, '-o', `jsonpath=${jsonpath}`]).stdout.trim();
}

/** A busybox container spec for the cluster's imported image. */
export function busybox(name: string, command: readonly string[]): Record<string, unknown> {
  return { name, image: cluster().busyboxImage, imagePullPolicy: 'Never', command };
}

/** Every node of the cluster with its Ready condition True (polled every 500 ms). */
export async function nodesReady(timeoutMs: number): Promise<void> {
  for (const node of cluster().nodes)
    await waitFor(`${node} Ready`, () => (nodeReady(node) === 'True' ? true : undefined), timeoutMs);
}

/**
 * Waits for exactly `count` pods labelled app=`app` in `namespace`, all Running with an address,
 * none terminating.
 * @returns those pods
 * @throws Error after `timeoutMs` (default 300 s)
 */
export function podsRunning(
  namespace: string,
  app: string,
  count: number,
  timeoutMs = 300_000,
): Promise<PodObject[]> {
  return waitFor(
    `${count} Running pods of ${app}`,
    () => {
      const all = pods(namespace, `app=${app}`);
      const ready = all.filter(
        (p) => p.status.phase === 'Running' && p.status.podIP && !p.metadata.deletionTimestamp,
      );
      return ready.length === count && all.length === count ? ready : undefined;
    },
    timeoutMs,
  );
}

/** The allocations of namespace `ns` now. */
export const allocationsOf = (ns: string): Allocation[] => allocations().filter((a) => a.namespace === ns);

/** One pod's allocation in {@link ledger}: its address, node, block CIDR and the block's affinity. */
export interface LedgerEntry {
  readonly ip: string;
  readonly node: string;
  readonly block: string;
  readonly affinity: string | null;
}

/** The allocations of namespace `ns` by pod name (a pod holding two: the last one listed). */
export function ledger(ns: string): Map<string, LedgerEntry> {
  return new Map(
    allocationsOf(ns).map((a) => [
      a.pod ?? '',
      { ip: addressOf(a), node: a.node, block: a.cidr, affinity: a.affinity },
    ]),
  );
}

/**
 * `ipamctl check` exit 0, retried every 2 s for 60 s (the controller's pool status may lag a
 * moment).
 * @throws Error with the last report after 60 s
 */
export function checkClean(): Promise<true> {
  let last = '';
  return waitFor(
    'ipamctl check clean',
    () => {
      const r = ipamctl(['check']);
      last = r.stdout + r.stderr;
      return r.status === 0 ? true : undefined;
    },
    60_000,
    2000,
  ).catch((e: unknown) => {
    throw new Error(`${(e as Error).message}; last report:\n${last}`);
  });
}

/**
 * One `ipamctl check -o FILE --limit 0`: its exit status (0 clean, 1 problems), its summary and
 * the JSON report (docs/design-cli.md §Report).
 * @throws Error with ipamctl's output when it exits otherwise (it could not check)
 */
export function checkReport(): { status: number; stdout: string; report: Report } {
  const dir = mkdtempSync(join(tmpdir(), 'ipamctl-check-'));
  try {
    const file = join(dir, 'report.json');
    const r = ipamctl(['check', '-o', file, '--limit', '0']);
    if (r.status !== 0 && r.status !== 1)
      throw new Error(`ipamctl check exited ${r.status}:\n${r.stdout}${r.stderr}`);
    return { status: r.status, stdout: r.stdout, report: JSON.parse(readFileSync(file, 'utf8')) as Report };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A Deployment of `replicas` busybox `sleep 3600` pods labelled app=NAME, placed by `placement`. */
function sleepDeployment(
  name: string,
  replicas: number,
  graceSeconds: number,
  placement: Record<string, unknown>,
): Record<string, unknown> {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          terminationGracePeriodSeconds: graceSeconds,
          ...placement,
          containers: [busybox('sleep', ['sleep', '3600'])],
        },
      },
    },
  };
}

/**
 * A Deployment of busybox `sleep 3600` pods labelled app=NAME, spread evenly over the nodes
 * (topologySpreadConstraints on the hostname, maxSkew 1, DoNotSchedule).
 */
export function spreadDeployment(
  name: string,
  replicas: number,
  graceSeconds: number,
): Record<string, unknown> {
  return sleepDeployment(name, replicas, graceSeconds, {
    topologySpreadConstraints: [
      {
        maxSkew: 1,
        topologyKey: 'kubernetes.io/hostname',
        whenUnsatisfiable: 'DoNotSchedule',
        labelSelector: { matchLabels: { app: name } },
      },
    ],
  });
}

/** A Deployment of busybox `sleep 3600` pods pinned to one node (grace 1 s), `replicas` 0 unless given. */
export function pinnedDeployment(name: string, node: string, replicas = 0): Record<string, unknown> {
  return sleepDeployment(name, replicas, 1, { nodeSelector: { 'kubernetes.io/hostname': node } });
}
