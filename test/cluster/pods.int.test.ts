/**
 * Pods on the real multi-node cluster (kubelet + containerd + runc per node, blockipam under
 * ptp + portmap): spread Deployment, static address, hostPort, deletes with and without grace
 * and the runtime's late repeated DELs, STATUS and NotReady, cniVersion 1.0.0.
 * The tests run in order and share the namespace; the late-DEL test comes last so the ~1 min
 * the kubelet waits before its garbage collection runs is spent on the tests in between.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { cluster, kubectl, kubectlOk, inNode } from '../helpers/cluster.ts';
import {
  addressOf,
  allocations,
  busybox,
  spreadDeployment,
  cniArg,
  cniCalls,
  inCidr,
  installBlockipam,
  checkClean,
  ipamctl,
  nodeReady,
  pods,
  setCniVersion,
  waitFor,
  type PodObject,
} from './blockipam.ts';
import { writeLifeOfPod } from './cni-life.ts';

const ns = 'bipam-pods';
/** Pods deleted by the tests: the late DELs are awaited for their sandboxes at the end. */
const deleted: { node: string; uid: string; sandbox: string; at: bigint }[] = [];

before(() => {
  installBlockipam();
  kubectlOk(['create', 'namespace', ns]);
});
after(() => {
  kubectl(['delete', 'namespace', ns, '--wait=false']);
});

function apply(manifest: Record<string, unknown>): void {
  kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(manifest));
}

function runningPods(selector: string, count: number): Promise<PodObject[]> {
  return waitFor(
    `${count} Running pods ${selector}`,
    () => {
      const ps = pods(ns, selector).filter((p) => p.status.phase === 'Running' && p.status.podIP);
      return ps.length === count ? ps : undefined;
    },
    180_000,
  );
}

/** The sandbox ID the runtime gave a pod: CNI_CONTAINERID of blockipam's ADD for its UID. */
function sandboxOf(pod: PodObject): string {
  const add = cniCalls(pod.spec.nodeName ?? '', 'blockipam').find(
    (c) => c.env.CNI_COMMAND === 'ADD' && cniArg(c, 'K8S_POD_UID') === pod.metadata.uid,
  );
  assert.ok(add, `no blockipam ADD recorded for ${pod.metadata.name}`);
  return add.env.CNI_CONTAINERID ?? '';
}

/** Waits until no allocation names one of the pods, then remembers them for the late DELs. */
async function released(gone: readonly PodObject[], since: bigint): Promise<void> {
  const uids = new Set(gone.map((p) => p.metadata.uid));
  await waitFor(
    'the deleted pods’ addresses to be released',
    () => (allocations().some((a) => uids.has(a.podUID ?? '')) ? undefined : true),
    90_000,
  );
  for (const p of gone)
    deleted.push({ node: p.spec.nodeName ?? '', uid: p.metadata.uid, sandbox: sandboxOf(p), at: since });
}

let spread: PodObject[] = [];
let statics: PodObject[] = [];

test('a Deployment spread over the nodes runs with addresses from blocks affine to their nodes', async () => {
  const c = cluster();
  const replicas = 2 * c.nodes.length;
  apply(spreadDeployment('spread', replicas, 2));
  spread = await runningPods('app=spread', replicas);
  for (const node of c.nodes)
    assert.equal(spread.filter((p) => p.spec.nodeName === node).length, 2, `pods on ${node}`);
  const allocs = allocations();
  const ips = new Set<string>();
  for (const p of spread) {
    const mine = allocs.filter((a) => a.podUID === p.metadata.uid);
    assert.equal(mine.length, 1, `allocations of ${p.metadata.name}`);
    const a = mine[0]!;
    assert.equal(addressOf(a), p.status.podIP, `${p.metadata.name}: allocation is the pod IP`);
    assert.equal(a.affinity, p.spec.nodeName, `${p.metadata.name}: block ${a.block} affine to its node`);
    assert.equal(a.node, p.spec.nodeName);
    assert.equal(a.pod, p.metadata.name);
    assert.equal(a.namespace, ns);
    assert.equal(a.handle, `k8s-pod-network.${sandboxOf(p)}.eth0`);
    assert.ok(inCidr(p.status.podIP ?? '', '10.244.0.0/16'));
    ips.add(p.status.podIP ?? '');
  }
  assert.equal(ips.size, replicas, 'no two pods share an address');
});

test('a pod with a static address annotation gets that address', async () => {
  const node = cluster().nodes[1 % cluster().nodes.length]!;
  apply({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'static',
      labels: { app: 'static' },
      annotations: { 'ipam.blockipam.io/ip-addrs': '["10.244.250.10"]' },
    },
    spec: {
      nodeName: node,
      terminationGracePeriodSeconds: 5,
      containers: [busybox('sleep', ['sleep', '3600'])],
    },
  });
  const [p] = await runningPods('app=static', 1);
  assert.equal(p?.status.podIP, '10.244.250.10');
  const mine = allocations().filter((a) => a.podUID === p.metadata.uid);
  assert.deepEqual(
    mine.map((a) => [addressOf(a), a.pod]),
    [['10.244.250.10', 'static']],
  );
  statics = [p];
});

test('a hostPort (portmap) answers on the node IP', async () => {
  const c = cluster();
  apply({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'hostport', labels: { app: 'hostport' } },
    spec: {
      nodeName: c.nodes[0],
      terminationGracePeriodSeconds: 0,
      containers: [
        {
          ...busybox('echo', ['sh', '-c', 'while true; do echo hello-hostport | nc -l -p 8080; done']),
          ports: [{ containerPort: 8080, hostPort: 30080 }],
        },
      ],
    },
  });
  const [p] = await runningPods('app=hostport', 1);
  const answer = await waitFor(
    'an answer on the hostPort',
    () => {
      const r = inNode('cluster', 'bash', [
        '-c',
        `exec 3<>/dev/tcp/${c.nodeIps[0]}/30080 && timeout 3 cat <&3`,
      ]);
      return r.stdout.includes('hello-hostport') ? r.stdout : undefined;
    },
    30_000,
  );
  assert.match(answer, /hello-hostport/);
  statics.push(p!);
});

test('deleted pods release every address, with grace 0 and grace > 0; check is clean', async () => {
  const now = (): bigint => BigInt(Date.now()) * 1_000_000n;
  const t1 = now();
  kubectlOk(['-n', ns, 'delete', 'deployment', 'spread', '--wait=false']);
  kubectlOk(['-n', ns, 'delete', 'pod', 'static', 'hostport', '--grace-period=0', '--force', '--wait=false']);
  await released([...spread, ...statics], t1);
  await checkClean();
});

test('cniVersion 1.1.0: STATUS reaches the plugin; a disabled pool turns the nodes NotReady, enabling it makes them Ready', async () => {
  const c = cluster();
  for (const node of c.nodes) {
    const status = cniCalls(node, 'blockipam').filter((x) => x.env.CNI_COMMAND === 'STATUS');
    assert.ok(status.length > 0, `STATUS calls on ${node}`);
    assert.equal(status.at(-1)?.rc, 0, `last STATUS on ${node} succeeded`);
  }
  const disabled = ipamctl(['pool', 'disable', 'default-ipv4']);
  assert.equal(disabled.status, 0, disabled.stderr);
  try {
    for (const node of c.nodes)
      await waitFor(`${node} NotReady`, () => (nodeReady(node) === 'False' ? true : undefined), 90_000);
    const failed = cniCalls(c.nodes[0]!, 'blockipam').filter((x) => x.env.CNI_COMMAND === 'STATUS');
    assert.notEqual(failed.at(-1)?.rc, 0, 'STATUS fails while no pool is usable');
    assert.match(failed.at(-1)?.stdout ?? '', /"code":\s*50/);
  } finally {
    const enabled = ipamctl(['pool', 'enable', 'default-ipv4']);
    assert.equal(enabled.status, 0, enabled.stderr);
  }
  for (const node of c.nodes)
    await waitFor(`${node} Ready again`, () => (nodeReady(node) === 'True' ? true : undefined), 90_000);
});

test('cniVersion 1.0.0 works: a pod on a 1.0.0 node gets and releases its address', async () => {
  const c = cluster();
  const node = c.nodes.at(-1)!;
  setCniVersion(node, '1.0.0');
  try {
    // containerd reloads the conf dir on change; STATUS calls stop once 1.0.0 is in use.
    await new Promise((r) => setTimeout(r, 2000));
    apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'v100', labels: { app: 'v100' } },
      spec: {
        nodeName: node,
        terminationGracePeriodSeconds: 0,
        containers: [busybox('sleep', ['sleep', '3600'])],
      },
    });
    const [p] = await runningPods('app=v100', 1);
    const add = cniCalls(node, 'blockipam').find(
      (x) => x.env.CNI_COMMAND === 'ADD' && cniArg(x, 'K8S_POD_UID') === p!.metadata.uid,
    );
    assert.equal(add?.stdin.cniVersion, '1.0.0');
    assert.equal((JSON.parse(add?.stdout ?? '{}') as { cniVersion?: string }).cniVersion, '1.0.0');
    const a = allocations().find((x) => x.podUID === p!.metadata.uid);
    assert.equal(a && addressOf(a), p!.status.podIP);
    assert.equal(a?.affinity, node);
    const t = BigInt(Date.now()) * 1_000_000n;
    kubectlOk(['-n', ns, 'delete', 'pod', 'v100', '--grace-period=0', '--force', '--wait=false']);
    await released([p!], t);
  } finally {
    setCniVersion(node, '1.1.0');
  }
});

test('the runtime’s late repeated DELs (empty CNI_NETNS) succeed and release nothing more; check is clean', async () => {
  assert.ok(deleted.length > 0);
  const before = allocations().length;
  for (const d of deleted) {
    await waitFor(
      `a late DEL for sandbox ${d.sandbox.slice(0, 12)} on ${d.node}`,
      () =>
        cniCalls(d.node, 'blockipam').some(
          (x) =>
            x.env.CNI_COMMAND === 'DEL' &&
            x.env.CNI_CONTAINERID === d.sandbox &&
            x.env.CNI_NETNS === '' &&
            x.at > d.at,
        )
          ? true
          : undefined,
      180_000,
      2000,
    );
  }
  for (const d of deleted) {
    const dels = cniCalls(d.node, 'blockipam').filter(
      (x) => x.env.CNI_COMMAND === 'DEL' && x.env.CNI_CONTAINERID === d.sandbox,
    );
    for (const x of dels) assert.equal(x.rc, 0, `DEL of ${d.sandbox.slice(0, 12)} at ${x.at} exits 0`);
  }
  assert.equal(allocations().length, before, 'the late DELs released nothing that was still in use');
  assert.ok(!allocations().some((a) => deleted.some((d) => d.uid === a.podUID)));
  await checkClean();
  writeLifeOfPod(deleted[0]!.node, deleted[0]!.sandbox);
});
