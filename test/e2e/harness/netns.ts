/**
 * Network namespaces for end-to-end tests (run as root): a "bridge" namespace holding a Linux
 * bridge, "node" namespaces joined to it by veth pairs (192.0.2.0/24, TEST-NET-1, addresses
 * exist only inside these namespaces), and pod namespaces. Every name starts with a prefix
 * unique to the test process (`bipam<pid>-`), and `destroy()` removes all of them; stale
 * namespaces of dead test processes are swept at start.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { requireIntegrationTier } from '../../helpers/tier.ts';

/** Runs `ip` (or another command) and returns stdout; throws with stderr on failure. */
export function sh(cmd: string, args: readonly string[]): string {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Runs a command inside a namespace; returns {status, stdout, stderr}. */
export function inNs(
  ns: string,
  cmd: string,
  args: readonly string[],
): { status: number; stdout: string; stderr: string } {
  const r = spawnSync('ip', ['netns', 'exec', ns, cmd, ...args], { encoding: 'utf8' });
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

export function netnsPath(name: string): string {
  return `/var/run/netns/${name}`;
}

/** Deletes namespaces `bipam<pid>-*` whose pid is no longer alive (left by a killed run). */
export function sweepStale(): void {
  if (!existsSync('/var/run/netns')) return;
  for (const name of readdirSync('/var/run/netns')) {
    const m = /^bipam(\d+)-/.exec(name);
    if (m && !existsSync(`/proc/${m[1]}`)) spawnSync('ip', ['netns', 'del', name]);
  }
}

export interface Topology {
  readonly prefix: string;
  /** Node namespace names, in order. */
  readonly nodes: readonly string[];
  /** Node address on the bridge, e.g. 192.0.2.11 for node 1. */
  nodeAddress(index: number): string;
  /** Creates a pod namespace `<prefix>p-<name>` (loopback up). Returns its name. */
  addPod(name: string): string;
  deletePod(name: string): void;
  /** Removes every namespace created (idempotent). */
  destroy(): void;
}

/**
 * Creates the bridge namespace and `nodeCount` node namespaces, each with `eth0` on the bridge
 * and loopback up.
 * @param tag short tag to tell several topologies of one process apart (≤ 4 chars)
 */
export function createTopology(nodeCount: number, tag = 't'): Topology {
  requireIntegrationTier('root and network namespaces');
  sweepStale();
  const prefix = `bipam${process.pid}-${tag}-`;
  const created: string[] = [];
  const addNs = (name: string): string => {
    sh('ip', ['netns', 'add', name]);
    created.push(name);
    sh('ip', ['-n', name, 'link', 'set', 'lo', 'up']);
    return name;
  };
  const topo: Topology = {
    prefix,
    nodes: [],
    nodeAddress: (i) => `192.0.2.${11 + i}`,
    addPod: (name) => addNs(`${prefix}p-${name}`),
    deletePod: (name) => {
      spawnSync('ip', ['netns', 'del', `${prefix}p-${name}`]);
    },
    destroy: () => {
      for (const name of created.reverse()) spawnSync('ip', ['netns', 'del', name]);
      created.length = 0;
    },
  };
  try {
    const br = addNs(`${prefix}br`);
    sh('ip', ['-n', br, 'link', 'add', 'br0', 'type', 'bridge']);
    sh('ip', ['-n', br, 'link', 'set', 'br0', 'up']);
    for (let i = 0; i < nodeCount; i++) {
      const node = addNs(`${prefix}n${i + 1}`);
      (topo.nodes as string[]).push(node);
      sh('ip', ['-n', br, 'link', 'add', `vb${i}`, 'type', 'veth', 'peer', 'name', `vn${i}`]);
      sh('ip', ['-n', br, 'link', 'set', `vn${i}`, 'netns', node]);
      sh('ip', ['-n', br, 'link', 'set', `vb${i}`, 'master', 'br0', 'up']);
      sh('ip', ['-n', node, 'link', 'set', `vn${i}`, 'name', 'eth0']);
      sh('ip', ['-n', node, 'addr', 'add', `${topo.nodeAddress(i)}/24`, 'dev', 'eth0']);
      sh('ip', ['-n', node, 'link', 'set', 'eth0', 'up']);
    }
  } catch (e) {
    topo.destroy();
    throw e;
  }
  return topo;
}
