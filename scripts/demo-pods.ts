/**
 * The pod part of the main-job demo (README): two "node" network namespaces on a bridge, pods
 * as namespaces, each pod started through ptp + portmap with blockipam as IPAM, then a table of
 * who got which address from which block, and a ping between pods of one node. Everything is
 * torn down at the end (DEL through the chain, namespaces removed) unless --keep.
 *
 * Needs root, the control plane described by CP_* variables (scripts/demo.ts exports them;
 * without them a private control plane is started), the CRDs and at least one IPPool.
 *
 * Usage: node scripts/demo-pods.ts [--pods-per-node N] [--keep]
 */
import { existsSync } from 'node:fs';
import { checkBlockInvariants, type IPAMBlock } from '../core/index.ts';
import { kubectl } from '../test/helpers/control-plane.ts';
import { inNs, netnsPath } from '../test/e2e/harness/netns.ts';
import { createWorld, currentPtp, debianPtp } from '../test/e2e/harness/world.ts';

const argv = process.argv.slice(2);
const perNode = Number(argv[argv.indexOf('--pods-per-node') + 1] ?? 0) || 2;
const keep = argv.includes('--keep');
const ptp = existsSync('/usr/lib/cni/ptp') ? debianPtp : currentPtp();

interface Row {
  pod: string;
  node: string;
  address: string;
  gateway: string;
  block: string;
  ping: string;
}

function blocks(): IPAMBlock[] {
  const r = kubectl(['get', 'ipamblocks', '-o', 'json']);
  return r.status === 0 ? (JSON.parse(r.stdout) as { items: IPAMBlock[] }).items : [];
}

function table(rows: readonly Row[]): string {
  const cols: (keyof Row)[] = ['pod', 'node', 'address', 'gateway', 'block', 'ping'];
  const width = cols.map((c) => Math.max(c.length, ...rows.map((r) => r[c].length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(width[i] ?? 0)).join('  ');
  return [line(cols.map((c) => c.toUpperCase())), ...rows.map((r) => line(cols.map((c) => r[c])))].join('\n');
}

const world = await createWorld(2, ptp, 'demo');
const started: {
  node: number;
  rt: { containerID: string; netns: string; ifname: string; args: [string, string][] };
}[] = [];
try {
  console.log(
    `${ptp.label} (CNI ${ptp.cniVersion}) + portmap, IPAM blockipam; nodes: ${world.nodeName(0)}, ${world.nodeName(1)}\n`,
  );
  const rows: Row[] = [];
  for (let node = 0; node < 2; node++) {
    for (let i = 1; i <= perNode; i++) {
      const pod = `pod-${node + 1}-${i}`;
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
    const p = inNs(`${world.topo.prefix}p-${row.pod}`, 'ping', [
      '-c',
      '1',
      '-W',
      '2',
      peer.address.split('/')[0] as string,
    ]);
    row.ping = `${peer.pod}: ${p.status === 0 ? 'ok' : 'FAILED'}`;
  }
  console.log(table(rows));
  const problems = all.flatMap((b) => checkBlockInvariants(b));
  console.log(
    `\n${new Set(rows.map((r) => r.address)).size} distinct addresses for ${rows.length} pods; block invariants: ${problems.length === 0 ? 'ok' : problems.join('; ')}`,
  );
  if (rows.some((r) => r.ping.endsWith('FAILED'))) process.exitCode = 1;
} finally {
  if (!keep) {
    for (const s of started.reverse())
      await world
        .cni(s.node)
        .del(world.conflist(s.node), s.rt)
        .catch((e: unknown) => console.error(`DEL ${s.rt.containerID}: ${String(e)}`));
    await world.destroy();
  }
}
