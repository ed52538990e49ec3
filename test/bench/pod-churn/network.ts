/**
 * The pods' network on the test cluster's nodes for the pod-churn benchmark: one conflist per
 * IPAM under the same network name and plugin chain (ptp + portmap), written atomically where
 * containerd reads it (it reloads the directory by itself), and the node agents run beside
 * blockipam's plugin in the install's `script` mode.
 *
 * The harness puts cni-recorder.sh (a bash script that writes every call's environment, stdin
 * and stdout to files) in front of each plugin; a benchmark times the IPAMs, not the recorder,
 * so the bin directory's entries are pointed at the real executables instead.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Cluster } from '../../helpers/cluster.ts';
import { calicoPlugin } from './calico.ts';

export type Ipam = 'blockipam' | 'host-local' | 'calico';

/** The MTU of both IPAMs' ptp (the chart's agents get it as `cni.mtu`). */
export const POD_MTU = 1400;

/** The chain both IPAMs share (as install-blockipam.sh writes it, minus blockipam's debug log). */
function conflist(ipam: Record<string, unknown>): string {
  return JSON.stringify({
    cniVersion: '1.1.0',
    name: 'k8s-pod-network',
    plugins: [
      { type: 'ptp', mtu: POD_MTU, capabilities: { 'io.kubernetes.cri.pod-annotations': true }, ipam },
      { type: 'portmap', snat: true, capabilities: { portMappings: true } },
    ],
  });
}

/** host-local's range of node `index` (0-based): a /24 each — 253 pod addresses, ≥ 2 × 110 pods. */
export const hostLocalRange = (index: number): string => `10.245.${index + 1}.0/24`;

/** Where host-local keeps node `node`'s allocations (one file per address). */
export const hostLocalDir = (c: Cluster, node: string): string => join(c.runDir, node, 'host-local');

/**
 * Writes `ipam`'s conflist on every node: ptp + portmap with host-local or blockipam; Calico's
 * own CNI plugin (with calico-ipam) + portmap for calico, at cniVersion 0.3.1 as Calico's
 * manifests write it.
 */
export function useIpam(c: Cluster, ipam: Ipam): void {
  c.nodes.forEach((node, index) => {
    const dir = join(c.runDir, node, 'cni', 'net.d');
    const text =
      ipam === 'calico'
        ? JSON.stringify({
            cniVersion: '0.3.1',
            name: 'k8s-pod-network',
            plugins: [
              calicoPlugin(c, node, POD_MTU),
              { type: 'portmap', snat: true, capabilities: { portMappings: true } },
            ],
          })
        : conflist(
            ipam === 'host-local'
              ? {
                  type: 'host-local',
                  ranges: [[{ subnet: hostLocalRange(index) }]],
                  routes: [{ dst: '0.0.0.0/0' }],
                  dataDir: hostLocalDir(c, node),
                }
              : {
                  type: 'blockipam',
                  nodeName: node,
                  kubeconfig: join(c.runDir, node, 'cni', 'blockipam.kubeconfig'),
                  logFile: join(c.runDir, node, 'log', 'blockipam.log'),
                  logLevel: 'info',
                },
          );
    writeFileSync(join(dir, '.10-blockipam.conflist'), text);
    renameSync(join(dir, '.10-blockipam.conflist'), join(dir, '10-blockipam.conflist'));
  });
}

/**
 * Points every node's CNI bin entries at the real plugins (no recorder); adds host-local.
 * `blockipam: false` leaves blockipam's entry alone (the chart's agent installs it).
 */
export function bypassRecorder(c: Cluster, options: { blockipam: boolean } = { blockipam: true }): void {
  for (const node of c.nodes) {
    const bin = join(c.runDir, node, 'cni', 'bin');
    const names = ['ptp', 'portmap', 'loopback', 'host-local', ...(options.blockipam ? ['blockipam'] : [])];
    for (const name of names) {
      const real = name === 'blockipam' ? join(bin, 'real', 'blockipam') : join(c.cniBin, name);
      rmSync(join(bin, name), { force: true });
      symlinkSync(real, join(bin, name));
    }
    mkdirSync(hostLocalDir(c, node), { recursive: true });
  }
}

/** Addresses host-local holds on every node (its files named by address). */
export function hostLocalHeld(c: Cluster): number {
  let held = 0;
  for (const node of c.nodes) {
    const dir = join(hostLocalDir(c, node), 'k8s-pod-network');
    if (existsSync(dir)) held += readdirSync(dir).filter((f) => /^\d+\.\d+\.\d+\.\d+$/.test(f)).length;
  }
  return held;
}

/** The node agents (one host process per node, admin kubeconfig), stopped together. */
export interface Agents {
  readonly pids: readonly number[];
  stop(): Promise<void>;
}

/** Exit codes of a process ended by a signal, as a shell reports them (128 + signal number). */
const SIGNAL_EXIT: Readonly<Record<'SIGTERM' | 'SIGINT', number>> = { SIGTERM: 143, SIGINT: 130 };

/**
 * Starts one agent per node; returns once they are spawned (each serves its node once synced).
 * Until `stop()`, SIGTERM and SIGINT make this process exit (143 / 130) instead of dying at once
 * — Node's default skips every `finally` and exit handler, which left the agents (host
 * processes) running against a torn-down cluster — and any exit SIGTERMs the agents still running.
 */
export function startAgents(c: Cluster, repoRoot: string): Agents {
  const children: ChildProcess[] = c.nodes.map((node) =>
    spawn(
      join(repoRoot, 'node_modules', '.bin', 'node'),
      [
        join(repoRoot, 'block-controller', 'agent', 'main.ts'),
        'run',
        '--node-name',
        node,
        '--kubeconfig',
        c.kubeconfig,
        '--metrics-host',
        '127.0.0.1',
        '--metrics-port',
        '0',
        '--log-level',
        'warn',
      ],
      { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, NODE_NAME: '' } },
    ),
  );
  const running = (child: ChildProcess): boolean => child.exitCode === null && child.signalCode === null;
  const onExit = (): void => {
    for (const child of children) if (running(child)) child.kill('SIGTERM');
  };
  const onSignal = (signal: 'SIGTERM' | 'SIGINT'): void => process.exit(SIGNAL_EXIT[signal]);
  process.on('exit', onExit);
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  const stop = async (): Promise<void> => {
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (!running(child)) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGTERM');
          }),
      ),
    );
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    process.off('exit', onExit);
  };
  return { pids: children.map((ch) => ch.pid ?? 0), stop };
}
