/**
 * Gives a test the run's multi-node Kubernetes cluster (kubelet + containerd per node, see
 * test/cluster/ and docs/test-cluster.md).
 *
 * Under scripts/run-tests.ts one cluster serves the whole run (started when a test file under
 * test/cluster/ is selected) and is described by CLUSTER_* environment variables. A test file run
 * on its own starts a private one on first use and tears it down when the process exits; a
 * teardown whose host check fails sets the exit code to 1.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { requireIntegrationTier } from './tier.ts';

const clusterDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'cluster');

/** What a test needs to reach the cluster. Paths are absolute. */
export interface Cluster {
  readonly runDir: string;
  /** Node names in order: node-1, node-2, … */
  readonly nodes: readonly string[];
  /** Node IPs on the cluster bridge, same order as `nodes` (10.99.0.11, …). */
  readonly nodeIps: readonly string[];
  /**
   * The nodes' IPv6 InternalIPs, same order as `nodes` (fd00:99::11, …; the bridge is
   * fd00:99::1): only for a cluster started with `ipv6` ({@link ClusterOptions}), else empty.
   */
  readonly nodeIpv6s: readonly string[];
  /** https://127.0.0.1:PORT — the API server as seen from the host (forwarded). */
  readonly apiUrl: string;
  /** https://10.99.0.1:6443 — the API server as seen from the cluster's namespaces and pods. */
  readonly innerApiUrl: string;
  /** Admin (system:masters) kubeconfig for the host side. */
  readonly kubeconfig: string;
  /** Admin kubeconfig for use inside a node or the cluster namespace. */
  readonly innerKubeconfig: string;
  readonly caFile: string;
  /** kubectl, kubelet, kube-apiserver … */
  readonly bin: string;
  /** ptp, portmap, loopback, host-local v1.10.0 */
  readonly cniBin: string;
  /** containerd, ctr, containerd-shim-runc-v2, runc */
  readonly nodeBin: string;
  /** Image references every node has imported (imagePullPolicy: Never). */
  readonly pauseImage: string;
  readonly busyboxImage: string;
  /** Start to every node registered, seconds (build excluded). */
  readonly startupSeconds: number;
}

/** A cluster started by {@link startCluster}: its CLUSTER_* variables and how to stop it. */
export interface StartedCluster {
  readonly env: Readonly<Record<string, string>>;
  /** Tears it down through down.sh; false when the teardown's host check failed. Idempotent. */
  stop(): boolean;
}

function readEnvFile(path: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) env[line.slice(0, eq)] = line.slice(eq + 1).replace(/^"(.*)"$/, '$1');
  }
  return env;
}

/** How {@link startCluster} starts a cluster: up.sh's options. */
export interface ClusterOptions {
  /** Number of nodes (up.sh's default 3). */
  readonly nodes?: number;
  /**
   * Dual-stack node addresses (up.sh --ipv6): each node also gets an IPv6 address on the bridge
   * and reports it as its second InternalIP. Default false (IPv4 InternalIPs only).
   */
  readonly ipv6?: boolean;
  /**
   * The pods' network as kind or GKE set it up (up.sh --pod-network): node podCIDRs allocated by
   * kube-controller-manager, a ptp + host-local conflist on each, static routes between them
   * (test/cluster/pod-network.sh). The nodes are Ready when the cluster is returned. Default none
   * (the nodes wait for a CNI config).
   */
  readonly podNetwork?: 'kind' | 'gke';
}

/**
 * Starts a cluster with test/cluster/up.sh, owned by this process (its watchdog tears it down if
 * this process dies, SIGKILL included). Progress goes to stderr. With BLOCKIPAM_KEEP_CLUSTER=1
 * there is no watchdog and stop() leaves the cluster up, printing how to tear it down.
 * @returns undefined when up.sh failed (its log tails are on stderr)
 */
export function startCluster(options: ClusterOptions = {}): StartedCluster | undefined {
  const keep = process.env.BLOCKIPAM_KEEP_CLUSTER === '1';
  const args = [join(clusterDir, 'up.sh'), ...(keep ? [] : ['--owner-pid', String(process.pid)])];
  if (options.nodes !== undefined) args.push('--nodes', String(options.nodes));
  if (options.ipv6) args.push('--ipv6');
  if (options.podNetwork) args.push('--pod-network', options.podNetwork);
  const up = spawnSync('bash', args, { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
  if (up.status !== 0) return undefined;
  const env = readEnvFile(up.stdout.trim().split('\n').pop() ?? '');
  const runDir = env.CLUSTER_RUN_DIR ?? '';
  let result: boolean | undefined;
  return {
    env,
    stop() {
      if (keep) {
        console.error(
          `cluster kept (BLOCKIPAM_KEEP_CLUSTER=1): ${runDir}; tear down: bash test/cluster/down.sh ${runDir}`,
        );
        return true;
      }
      result ??= spawnSync('bash', [join(clusterDir, 'down.sh'), runDir], { stdio: 'inherit' }).status === 0;
      return result;
    },
  };
}

function fromEnv(env: Record<string, string | undefined>): Cluster | undefined {
  if (env.CLUSTER_RUN_DIR === undefined) return undefined;
  const need = (k: string): string => {
    const v = env[k];
    if (v === undefined || v === '') throw new Error(`cluster env lacks ${k}`);
    return v;
  };
  return {
    runDir: need('CLUSTER_RUN_DIR'),
    nodes: need('CLUSTER_NODES').split(' '),
    nodeIps: need('CLUSTER_NODE_IPS').split(' '),
    nodeIpv6s: (env.CLUSTER_NODE_IPV6S ?? '').split(' ').filter(Boolean),
    apiUrl: need('CLUSTER_API_URL'),
    innerApiUrl: need('CLUSTER_INNER_API_URL'),
    kubeconfig: need('CLUSTER_KUBECONFIG'),
    innerKubeconfig: need('CLUSTER_INNER_KUBECONFIG'),
    caFile: need('CLUSTER_CA_FILE'),
    bin: need('CLUSTER_BIN'),
    cniBin: need('CLUSTER_CNI_BIN'),
    nodeBin: need('CLUSTER_NODE_BIN'),
    pauseImage: need('CLUSTER_PAUSE_IMAGE'),
    busyboxImage: need('CLUSTER_BUSYBOX_IMAGE'),
    startupSeconds: Number(need('CLUSTER_STARTUP_SECONDS')),
  };
}

let cached: Cluster | undefined;

/**
 * Returns the run's cluster, starting a private one when none was given.
 * @throws Error under the unit tier (test/helpers/tier.ts); when the cluster cannot be started
 *   (up.sh's log tails are on stderr)
 */
export function cluster(): Cluster {
  requireIntegrationTier('the test cluster');
  if (cached) return cached;
  const given = fromEnv(process.env);
  if (given) return (cached = given);
  const started = startCluster();
  if (!started) throw new Error('test/cluster/up.sh failed');
  process.on('exit', () => {
    if (!started.stop()) process.exitCode = 1;
  });
  Object.assign(process.env, started.env);
  return (cached = fromEnv(started.env) ?? raise('up.sh wrote no usable env file'));
}

/**
 * Starts a new cluster that {@link cluster} (and so every helper here) returns until it is
 * stopped: for a benchmark that gives each run a cluster of its own (pod-churn/main.ts), or a
 * test that needs other up.sh options than the run's cluster has (dual-stack nodes, a kind-shaped
 * pod network). A cluster given by the environment is replaced for that time.
 * @throws Error when up.sh fails
 */
export function startOwnCluster(options: ClusterOptions = {}): { cluster: Cluster; stop(): boolean } {
  requireIntegrationTier('the test cluster');
  const started = startCluster(options);
  if (!started) throw new Error('test/cluster/up.sh failed');
  const own = fromEnv(started.env) ?? raise('up.sh wrote no usable env file');
  const before = cached;
  cached = own;
  return {
    cluster: own,
    stop() {
      if (cached === own) cached = before;
      return started.stop();
    },
  };
}

function raise(message: string): never {
  throw new Error(message);
}

/** Result of a command run to completion. */
export interface RunResult {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
}

function run(cmd: string, args: readonly string[], input?: string): RunResult {
  const r = spawnSync(cmd, args, { input, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/**
 * Runs a command inside a node's (or the cluster namespace's) network + mount namespaces, with
 * KUBECONFIG set to the inner admin kubeconfig and kubectl / ctr on PATH.
 * @param where a node name or `cluster`
 */
export function inNode(where: string, cmd: string, args: readonly string[] = [], input?: string): RunResult {
  return run('bash', [join(clusterDir, 'ctl.sh'), cluster().runDir, 'exec', where, cmd, ...args], input);
}

/** Stops, kills, starts or restarts one of the cluster's daemons (kubelet-node-1, containerd-node-2 …). */
export function daemon(action: 'stop' | 'kill' | 'start' | 'restart', name: string): void {
  const r = run('bash', [join(clusterDir, 'ctl.sh'), cluster().runDir, action, name]);
  if (r.status !== 0) throw new Error(`ctl.sh ${action} ${name} failed: ${r.stderr}`);
}

/** Runs the cluster's kubectl as admin from the host. */
export function kubectl(args: readonly string[], input?: string): RunResult {
  const c = cluster();
  return run(join(c.bin, 'kubectl'), ['--kubeconfig', c.kubeconfig, ...args], input);
}

/** kubectl that throws with stderr on a non-zero exit and returns stdout. */
export function kubectlOk(args: readonly string[], input?: string): string {
  const r = kubectl(args, input);
  if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

/**
 * Imports an OCI image archive (e.g. one made by test/cluster/oci-image.ts or
 * scripts/build-image.sh) into every node's containerd (namespace k8s.io) — `ctl.sh RUN
 * import-image ARCHIVE` — so pods can use it with `imagePullPolicy: Never`.
 * @throws Error naming the node whose import failed
 */
export function importImage(archive: string): void {
  const r = run('bash', [join(clusterDir, 'ctl.sh'), cluster().runDir, 'import-image', archive]);
  if (r.status !== 0) throw new Error(`ctl.sh import-image ${archive} failed: ${r.stderr}`);
}
