/**
 * Gives a test the run's local control plane (etcd + kube-apiserver, see test/control-plane/).
 *
 * Under `npm test` / scripts/run-tests.ts, one control plane serves the whole run and is
 * described by CP_* environment variables. A test file run on its own (`node --test file`)
 * starts a private one on first use and stops it when the process exits.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { requireIntegrationTier } from './tier.ts';

/** What a test needs to reach the control plane. Paths are absolute. */
export interface ControlPlane {
  /** https://127.0.0.1:PORT */
  readonly apiUrl: string;
  readonly caFile: string;
  /** kubeconfig of `blockipam-admin` (group system:masters). */
  readonly adminKubeconfig: string;
  /** kubeconfig of `blockipam-dev` (authenticated, no roles: for RBAC tests). */
  readonly devKubeconfig: string;
  readonly adminToken: string;
  /** directory with etcd, kube-apiserver, kubectl */
  readonly bin: string;
  /** directory with cnitool, ptp, host-local, portmap (current upstream build) */
  readonly cniBin: string;
  readonly etcdUrl: string;
  /** e.g. "v1.37.2" */
  readonly serverVersion: string;
  readonly runDir: string;
}

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
let cached: ControlPlane | undefined;

function fromEnv(env: Record<string, string | undefined>): ControlPlane | undefined {
  const need = (k: string): string => {
    const v = env[k];
    if (v === undefined || v === '') throw new Error(`control plane env lacks ${k}`);
    return v;
  };
  if (env.CP_API_URL === undefined) return undefined;
  return {
    apiUrl: need('CP_API_URL'),
    caFile: need('CP_CA_FILE'),
    adminKubeconfig: need('CP_ADMIN_KUBECONFIG'),
    devKubeconfig: need('CP_DEV_KUBECONFIG'),
    adminToken: need('CP_ADMIN_TOKEN'),
    bin: need('CP_BIN'),
    cniBin: need('CP_CNI_BIN'),
    etcdUrl: need('CP_ETCD_URL'),
    serverVersion: need('CP_SERVER_VERSION'),
    runDir: need('CP_RUN_DIR'),
  };
}

/** A control plane started by {@link startControlPlane}: its CP_* variables and how to stop it. */
export interface StartedControlPlane {
  /** CP_* variables of the env file up.sh wrote (CP_RUN_DIR, CP_API_URL, CP_BIN, ...). */
  readonly env: Readonly<Record<string, string>>;
  /** Stops it through down.sh (recorded PIDs only); idempotent. */
  stop(): void;
}

/**
 * Starts a control plane with test/control-plane/up.sh, owned by this process (its watchdog
 * stops it if this process dies, SIGKILL included). up.sh's progress goes to stderr.
 * @returns undefined when up.sh failed (its log tails are on stderr)
 */
export function startControlPlane(): StartedControlPlane | undefined {
  const cpDir = join(repoRoot, 'test', 'control-plane');
  const up = spawnSync('bash', [join(cpDir, 'up.sh'), '--owner-pid', String(process.pid)], {
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  if (up.status !== 0) return undefined;
  const env: Record<string, string> = {};
  for (const line of readFileSync(up.stdout.trim().split('\n').pop() ?? '', 'utf8').split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) env[line.slice(0, eq)] = line.slice(eq + 1);
  }
  let stopped = false;
  return {
    env,
    stop() {
      if (stopped) return;
      stopped = true;
      spawnSync('bash', [join(cpDir, 'down.sh'), env.CP_RUN_DIR ?? ''], { stdio: 'inherit' });
    },
  };
}

/**
 * Returns the run's control plane, starting a private one when none was given.
 * @throws Error under the unit tier (test/helpers/tier.ts); when the control plane cannot be started (up.sh's log tail is on stderr).
 */
export function controlPlane(): ControlPlane {
  requireIntegrationTier('the control plane');
  if (cached) return cached;
  const given = fromEnv(process.env);
  if (given) return (cached = given);
  const started = startControlPlane();
  if (!started) throw new Error('test/control-plane/up.sh failed');
  const plane = fromEnv(started.env);
  if (!plane) throw new Error('up.sh wrote no usable env file');
  process.on('exit', () => started.stop());
  Object.assign(process.env, started.env);
  return (cached = plane);
}

/**
 * Makes `env` (a control plane's CP_* variables, e.g. {@link StartedControlPlane.env}) the one
 * {@link controlPlane} returns in this process, and puts it in process.env for child processes.
 * For a test file that needs a control plane of its own (test/helpers/private-control-plane.ts).
 * @throws Error when this process already used another control plane (its helpers would mix the two)
 */
export function useControlPlane(env: Readonly<Record<string, string>>): ControlPlane {
  const plane = fromEnv(env);
  if (!plane) throw new Error('useControlPlane: env lacks CP_API_URL');
  if (cached && cached.apiUrl !== plane.apiUrl)
    throw new Error(`useControlPlane: this process already uses the control plane at ${cached.apiUrl}`);
  Object.assign(process.env, env);
  return (cached = plane);
}

/** Result of a kubectl run. */
export interface KubectlResult {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs the control plane's kubectl (built alongside kube-apiserver) synchronously.
 * @param args kubectl arguments
 * @param options.kubeconfig defaults to the admin identity; options.input is fed to stdin
 */
export function kubectl(
  args: readonly string[],
  options: { kubeconfig?: string; input?: string } = {},
): KubectlResult {
  const cp = controlPlane();
  const r = spawnSync(
    join(cp.bin, 'kubectl'),
    ['--kubeconfig', options.kubeconfig ?? cp.adminKubeconfig, ...args],
    {
      input: options.input,
      encoding: 'utf8',
      // spawnSync's default (1 MiB) truncates a LIST of ~1,000 pods
      maxBuffer: 256 * 1024 * 1024,
    },
  );
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}
