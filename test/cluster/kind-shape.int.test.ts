/**
 * The pod network of kind and of GKE on the test cluster (test/cluster/up.sh --pod-network,
 * test/cluster/pod-network.sh; docs/test-cluster.md §Pod networks shaped as kind's and GKE's), each
 * on a cluster of its own, started by its test and torn down with the host check at its end,
 * one after the other:
 *
 * - every Node has a /24 spec.podCIDR of 10.244.0.0/16 (kube-controller-manager's node IPAM),
 *   and its conflist is kindnetd's [ptp + host-local on that podCIDR, portmap] under the shape's
 *   file and network name;
 * - two pods per node (a spread Deployment) get addresses in their node's podCIDR, and
 *   host-local's file for each — in the shape's dataDir inside the node, nothing on the host —
 *   names the pod's sandbox;
 * - a pod pings a pod on every other node: across nodes only over the routes to the other
 *   nodes' podCIDRs, which each node holds via those nodes' addresses, as kindnetd programs them.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { inNode, kubectl, kubectlOk, startOwnCluster, type Cluster } from '../helpers/cluster.ts';
import { inCidr, podsRunning, spreadDeployment, waitFor, type PodObject } from './blockipam.ts';

const ns = 'kind-shape';

interface Shape {
  readonly podNetwork: 'kind' | 'gke';
  /** Nodes of its cluster: three for kind (the seeds'), two suffice for GKE's file layout. */
  readonly nodes: number;
  readonly file: string;
  readonly network: string;
  /** host-local's dataDir as a node sees it; its files are under `<dataDir>/<network>/`. */
  readonly dataDir: string;
  /** Whether the conflist names the dataDir (GKE's leaves host-local's default). */
  readonly namesDataDir: boolean;
}

const SHAPES: readonly Shape[] = [
  // kindnetd's conflist: host-local's state on the node's tmpfs /run
  {
    podNetwork: 'kind',
    nodes: 3,
    file: '10-kindnet.conflist',
    network: 'kindnet',
    dataDir: '/run/cni-ipam-state',
    namesDataDir: true,
  },
  // GKE's routes-based ptp conflist: host-local's default dataDir
  {
    podNetwork: 'gke',
    nodes: 2,
    file: '10-gke-ptp.conflist',
    network: 'gke-pod-network',
    dataDir: '/var/lib/cni/networks',
    namesDataDir: false,
  },
];

/** The conflist pod-network.sh writes for `shape` on a node whose podCIDR is `podCidr`. */
function expectedConflist(shape: Shape, podCidr: string): Record<string, unknown> {
  return {
    cniVersion: '0.3.1',
    name: shape.network,
    plugins: [
      {
        type: 'ptp',
        ipMasq: false,
        ipam: {
          type: 'host-local',
          ...(shape.namesDataDir ? { dataDir: shape.dataDir } : {}),
          routes: [{ dst: '0.0.0.0/0' }],
          ranges: [[{ subnet: podCidr }]],
        },
        mtu: 1400,
      },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  };
}

/** The pod's sandbox ID on its node (containerd's label of the CRI sandbox container). */
function sandboxOf(pod: PodObject): string {
  const filter = `labels."io.kubernetes.pod.uid"==${pod.metadata.uid},labels."io.cri-containerd.kind"==sandbox`;
  const script = 'ctr --address "$CONTAINERD" -n k8s.io containers ls -q "$1"';
  const r = inNode(pod.spec.nodeName ?? '', 'sh', ['-c', script, 'sh', filter]);
  const ids = r.stdout.split('\n').filter(Boolean);
  assert.equal(ids.length, 1, `sandboxes of ${pod.metadata.name}: ${r.stdout}${r.stderr}`);
  return ids[0] ?? '';
}

let lastPing = '';
/** `from` pings `to` once, retried for up to 30 s (the first packet may wait on ARP). */
function pinged(from: PodObject, to: PodObject): Promise<string> {
  const ip = to.status.podIP ?? '';
  return waitFor(
    `a ping from ${from.metadata.name} (${from.spec.nodeName}) to ${ip} (${to.spec.nodeName})`,
    () => {
      const r = kubectl(['-n', ns, 'exec', from.metadata.name, '--', 'ping', '-c', '1', '-W', '5', ip]);
      lastPing = r.stdout + r.stderr;
      return r.status === 0 ? r.stdout : undefined;
    },
    30_000,
    1000,
  ).catch((e: unknown) => {
    throw new Error(`${(e as Error).message}; last: ${lastPing}`);
  });
}

/** Every node's podCIDR (a /24 of its own) and its conflist of `shape` on it. */
function checkConflists(shape: Shape, c: Cluster): Map<string, string> {
  const podCidr = new Map(
    c.nodes.map((n) => [n, kubectlOk(['get', 'node', n, '-o', 'jsonpath={.spec.podCIDR}']).trim()]),
  );
  for (const [node, cidr] of podCidr) {
    assert.match(cidr, /^10\.244\.\d+\.0\/24$/, `${node}'s podCIDR`);
    const text = readFileSync(join(c.runDir, node, 'cni', 'net.d', shape.file), 'utf8');
    assert.deepEqual(JSON.parse(text), expectedConflist(shape, cidr), `${node}'s ${shape.file}`);
  }
  assert.equal(new Set(podCidr.values()).size, c.nodes.length, 'every node has a podCIDR of its own');
  return podCidr;
}

/** Each pod's address in its node's podCIDR, host-local's file for it naming its sandbox. */
function checkAddresses(shape: Shape, running: readonly PodObject[], podCidr: Map<string, string>): void {
  for (const pod of running) {
    const node = pod.spec.nodeName ?? '';
    const ip = pod.status.podIP ?? '';
    assert.ok(inCidr(ip, podCidr.get(node) ?? ''), `${pod.metadata.name}: ${ip} in ${node}'s podCIDR`);
    // host-local's file for the address: "<container ID>\r\n<ifname>"
    const state = `${shape.dataDir}/${shape.network}/${ip}`;
    const r = inNode(node, 'cat', [state]);
    assert.equal(r.status, 0, `${node}: ${state}: ${r.stderr}`);
    assert.deepEqual(r.stdout.split('\r\n'), [sandboxOf(pod), 'eth0'], `${node}: ${state}`);
  }
  // the dataDir is the node's own: nothing of it on the host
  const onHost = join(shape.dataDir, shape.network);
  assert.equal(existsSync(onHost), false, `the host has ${onHost}`);
}

/** A pod on each node pings one on every other node; each node routes the others' podCIDRs. */
async function checkAcrossNodes(
  c: Cluster,
  running: readonly PodObject[],
  podCidr: Map<string, string>,
): Promise<void> {
  const on = (node: string): PodObject => running.find((p) => p.spec.nodeName === node) ?? assert.fail(node);
  for (const from of c.nodes)
    for (const to of c.nodes)
      if (from !== to) assert.match(await pinged(on(from), on(to)), /1 packets received/);
  // the routes that carried them, as kindnetd programs them: via the other node's address
  c.nodes.forEach((node, i) => {
    const routes = inNode(node, 'ip', ['-4', 'route', 'show']).stdout.split('\n');
    c.nodes.forEach((other, j) => {
      const route = `${podCidr.get(other)} via ${c.nodeIps[j]} dev node0`;
      if (i !== j)
        assert.ok(
          routes.some((r) => r.startsWith(route)),
          `${node}: ${route}`,
        );
    });
  });
}

async function checkShape(shape: Shape, c: Cluster): Promise<void> {
  const podCidr = checkConflists(shape, c);
  kubectlOk(['create', 'namespace', ns]);
  const replicas = 2 * c.nodes.length;
  kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(spreadDeployment('spread', replicas, 1)));
  const running = await podsRunning(ns, 'spread', replicas, 180_000);
  for (const node of c.nodes)
    assert.equal(running.filter((p) => p.spec.nodeName === node).length, 2, `pods on ${node}`);
  checkAddresses(shape, running, podCidr);
  await checkAcrossNodes(c, running, podCidr);
}

for (const shape of SHAPES)
  test(`up.sh --pod-network ${shape.podNetwork}: podCIDRs, ${shape.file}, host-local in ${shape.dataDir}, pods ping across nodes`, async () => {
    const own = startOwnCluster({ podNetwork: shape.podNetwork, nodes: shape.nodes });
    let hostUnchanged: boolean;
    try {
      await checkShape(shape, own.cluster);
    } finally {
      hostUnchanged = own.stop();
    }
    assert.ok(hostUnchanged, `the ${shape.podNetwork} cluster's teardown found the host changed`);
  });
