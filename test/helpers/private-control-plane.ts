/**
 * A control plane (etcd + kube-apiserver, test/control-plane/up.sh) of one test file alone, whose
 * kube-apiserver the test may stop and start again — an API server outage without touching the
 * run's shared control plane. The process is found by the PID up.sh recorded
 * (`<run dir>/apiserver.pid`, checked against its command line), stopped with SIGTERM (SIGKILL
 * after 20 s, as down.sh does) and started again with the very same command line: same port, PKI,
 * service-account keys and etcd, so every kubeconfig and token stays valid. The new PID is
 * recorded in the same file, so down.sh and the owner watchdog stop the restarted one too.
 */
import { execFile, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startControlPlane, useControlPlane, type ControlPlane } from './control-plane.ts';
import { requireIntegrationTier } from './tier.ts';

const run = promisify(execFile);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** How long a stopped kube-apiserver gets to exit after SIGTERM before SIGKILL (down.sh's 20 s). */
const STOP_GRACE_MS = 20_000;
/** How long a restarted kube-apiserver gets to answer /readyz 200 (up.sh's 120 s). */
const READY_TIMEOUT_MS = 120_000;

export interface PrivateControlPlane extends ControlPlane {
  /** The kube-apiserver's current PID. */
  apiServerPid(): number;
  /**
   * Stops kube-apiserver (SIGTERM, SIGKILL after 20 s) and resolves once the process is gone.
   * @throws Error when it is already stopped, or the recorded PID is not this run's apiserver
   */
  stopApiServer(): Promise<void>;
  /**
   * Starts kube-apiserver again with the command line it had and resolves once /readyz answers
   * 200 (as the admin).
   * @throws Error when it is running, or it is not ready within 120 s (its log tail in the message)
   */
  startApiServer(): Promise<void>;
  /** Stops the whole control plane (down.sh: recorded PIDs only); also done at process exit. */
  stop(): void;
}

/** True while `pid` is a live (not zombie) process. */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/**
 * Starts this process's own control plane and makes it the one every helper uses
 * ({@link useControlPlane}); call it before anything calls `controlPlane()`.
 * @throws Error when up.sh fails, or this process already uses another control plane
 */
export function privateControlPlane(): PrivateControlPlane {
  requireIntegrationTier('a private control plane');
  const started = startControlPlane();
  if (!started) throw new Error('test/control-plane/up.sh failed');
  const plane = useControlPlane(started.env);
  process.on('exit', () => started.stop());
  const pidFile = join(plane.runDir, 'apiserver.pid');
  const logFile = join(plane.runDir, 'apiserver.log');
  let argv: string[] | undefined;
  const pid = (): number => Number(readFileSync(pidFile, 'utf8').trim());
  return {
    ...plane,
    apiServerPid: pid,
    async stopApiServer() {
      if (argv) throw new Error('kube-apiserver is already stopped');
      const p = pid();
      const cmdline = readFileSync(`/proc/${p}/cmdline`, 'utf8')
        .split('\0')
        .filter((a) => a !== '');
      if (!cmdline.some((a) => a.includes(plane.runDir)))
        throw new Error(`PID ${p} is not the kube-apiserver of ${plane.runDir}`);
      argv = cmdline;
      process.kill(p, 'SIGTERM');
      const end = Date.now() + STOP_GRACE_MS;
      while (alive(p) && Date.now() < end) await sleep(100);
      if (alive(p)) process.kill(p, 'SIGKILL');
      while (alive(p)) await sleep(100);
    },
    async startApiServer() {
      if (!argv) throw new Error('kube-apiserver is running');
      const [exe, ...args] = argv;
      const log = openSync(logFile, 'a');
      const child = spawn(exe as string, args, { detached: true, stdio: ['ignore', log, log] });
      closeSync(log);
      child.unref();
      if (child.pid === undefined) throw new Error(`cannot start ${exe}`);
      writeFileSync(pidFile, String(child.pid));
      argv = undefined;
      const end = Date.now() + READY_TIMEOUT_MS;
      for (;;) {
        const ok = await run('curl', [
          '-fsS',
          '--max-time',
          '5',
          '--cacert',
          plane.caFile,
          '-H',
          `Authorization: Bearer ${plane.adminToken}`,
          `${plane.apiUrl}/readyz`,
        ]).then(
          () => true,
          () => false,
        );
        if (ok) return;
        if (!alive(child.pid) || Date.now() > end) {
          const tail = existsSync(logFile) ? readFileSync(logFile, 'utf8').slice(-2000) : '';
          throw new Error(`restarted kube-apiserver not ready: ${tail}`);
        }
        await sleep(200);
      }
    },
    stop: () => started.stop(),
  };
}
