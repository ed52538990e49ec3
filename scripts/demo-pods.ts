/**
 * The pod part of the main-job demo (README): "node" network namespaces on a bridge, pods as
 * namespaces, each pod started through ptp + portmap with blockipam as IPAM; returns a table of
 * who got which address from which block (and a ping between pods of one node), and a teardown
 * that DELs every pod through the chain and removes the namespaces.
 *
 * Needs root, the control plane described by CP_* variables (test/helpers/control-plane.ts),
 * the CRDs and at least one IPPool. Pod objects may exist (the plugin then records their UID).
 */
import { existsSync } from 'node:fs';
import { checkBlockInvariants, type IPAMBlock } from 'blockipam/core';
import { kubectl } from '../test/helpers/control-plane.ts';
import { inNs, netnsPath } from '../test/e2e/harness/netns.ts';
import { createWorld, currentPtp, debianPtp } from '../test/e2e/harness/world.ts';

/** One started pod. `address` has the block prefix, e.g. 10.244.3.70/26. */
export interface PodRow {
  pod: string;
  node: string;
  address: string;
  gateway: string;
  block: string;
  ping: string;
}

export interface DemoPods {
  readonly rows: readonly PodRow[];
  /** e.g. "Debian ptp 1.1.1 (CNI 1.0.0) + portmap" */
  readonly chain: string;
  /** Node names, in order. */
  readonly nodes: readonly string[];
  /** Distinct addresses, block invariant problems (empty = all hold). */
  readonly summary: { distinct: number; problems: string[] };
  /** CNI DEL of every pod (reverse order), then removes the namespaces. */
  teardown(): Promise<void>;
}

/** Demo pod name of the i-th (1-based) pod on node index `node` (0-based). */
export const demoPodName = (node: number, i: number): string => `pod-${node + 1}-${i}`;
/** Kubernetes node name of node index `node`, as the demo's world names it. */
export const demoNodeName = (node: number): string => `demo-node-${node + 1}`;

function blocks(): IPAMBlock[] {
  const r = kubectl(['get', 'ipamblocks', '-o', 'json']);
  return r.status === 0 ? (JSON.parse(r.stdout) as { items: IPAMBlock[] }).items : [];
}

/** Formats rows as an aligned text table. */
export function podTable(rows: readonly PodRow[]): string {
  const cols: (keyof PodRow)[] = ['pod', 'node', 'address', 'gateway', 'block', 'ping'];
  const width = cols.map((c) => Math.max(c.length, ...rows.map((r) => r[c].length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(width[i] ?? 0)).join('  ');
  return [line(cols.map((c) => c.toUpperCase())), ...rows.map((r) => line(cols.map((c) => r[c])))].join('\n');
}

/**
 * Starts `perNode` pods on each of two nodes in namespace `default`.
 * @throws the CNI error of the first failed ADD (pods already started are torn down first)
 */
export async function startDemoPods(perNode: number): Promise<DemoPods> {
  const ptp = existsSync('/usr/lib/cni/ptp') ? debianPtp : currentPtp();
  const world = await createWorld(2, ptp, 'demo');
  const started: {
    node: number;
    rt: { containerID: string; netns: string; ifname: string; args: [string, string][] };
  }[] = [];
  const teardown = async (): Promise<void> => {
    for (const s of started.reverse())
      await world
        .cni(s.node)
        .del(world.conflist(s.node), s.rt)
        .catch((e: unknown) => console.error(`DEL ${s.rt.containerID}: ${String(e)}`));
    await world.destroy();
  };
  try {
    const rows: PodRow[] = [];
    for (let node = 0; node < 2; node++) {
      for (let i = 1; i <= perNode; i++) {
        const pod = demoPodName(node, i);
        const containerID = `demo-${pod}`;
        const args: [string, string][] = [
          ['IgnoreUnknown', '1'],
          ['K8S_POD_NAMESPACE', 'default'],
          ['K8S_POD_NAME', pod],
          ['K8S_POD_INFRA_CONTAINER_ID', containerID],
        ];
        const rt = { containerID, netns: netnsPath(world.topo.addPod(pod)), ifname: 'eth0', args };
        const res = await world.cni(node).add(world.conflist(node), rt);
        started.push({ node, rt });
        const ip = (res.ips as { address: string; gateway: string }[])[0];
        rows.push({
          pod,
          node: world.nodeName(node),
          address: ip?.address ?? '?',
          gateway: ip?.gateway ?? '?',
          block: '',
          ping: '',
        });
      }
    }
    const all = blocks();
    for (const row of rows) {
      const b = all.find((bl) =>
        Object.values(bl.spec.allocations).some(
          (a) => a.handle === `${world.conflist(0).name}.demo-${row.pod}.eth0`,
        ),
      );
      row.block = b
        ? `${b.spec.cidr} (${b.spec.affinity === row.node ? 'affine' : `borrowed from ${b.spec.affinity ?? 'none'}`})`
        : '?';
    }
    for (const row of rows) {
      const peer = rows.find((r) => r.node === row.node && r.pod !== row.pod);
      if (!peer) continue;
      const target = peer.address.split('/')[0] ?? '';
      const p = inNs(`${world.topo.prefix}p-${row.pod}`, 'ping', ['-c', '1', '-W', '2', target]);
      row.ping = `${peer.pod}: ${p.status === 0 ? 'ok' : 'FAILED'}`;
    }
    return {
      rows,
      chain: `${ptp.label} (CNI ${ptp.cniVersion}) + portmap`,
      nodes: [world.nodeName(0), world.nodeName(1)],
      summary: {
        distinct: new Set(rows.map((r) => r.address)).size,
        problems: all.flatMap((b) => checkBlockInvariants(b)),
      },
      teardown,
    };
  } catch (error) {
    await teardown();
    throw error;
  }
}
