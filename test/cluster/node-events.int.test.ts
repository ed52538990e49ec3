/**
 * What happens to pods' addresses when a node's daemons restart or the node goes away, on the
 * real multi-node cluster: kubelet restart and containerd restart keep every address (no
 * second allocation, check clean); a node whose kubelet is killed and whose Node object is
 * deleted keeps its addresses, which check reports (docs/design-cli.md: pod-on-deleted-node,
 * then leaked-pod-deleted once the pod garbage collector removes the pod) until the node
 * agent's controller exists. The last test brings the node back and ends clean.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { cluster, daemon, kubectl, kubectlOk } from '../helpers/cluster.ts';
import {
  addressOf,
  allocations,
  spreadDeployment,
  installBlockipam,
  ipamctl,
  nodeReady,
  pods,
  waitFor,
  type PodObject,
} from './blockipam.ts';

const ns = 'bipam-node-events';

before(() => {
  installBlockipam();
  kubectlOk(['create', 'namespace', ns]);
});
after(() => {
  kubectl(['delete', 'namespace', ns, '--wait=false']);
});

async function steadyPods(count: number): Promise<PodObject[]> {
  return waitFor(
    `${count} Running pods`,
    () => {
      const ps = pods(ns, 'app=steady').filter(
        (p) => p.status.phase === 'Running' && p.status.podIP && !p.metadata.deletionTimestamp,
      );
      return ps.length === count ? ps : undefined;
    },
    180_000,
  );
}

/** The pod's eth0 address as the pod itself sees it (kubectl exec: kubelet and containerd up). */
function addressInside(pod: PodObject): string | undefined {
  const r = kubectl(['-n', ns, 'exec', pod.metadata.name, '--', 'ip', '-4', '-o', 'addr', 'show', 'eth0']);
  return r.status === 0 ? /inet (\S+)\//.exec(r.stdout)?.[1] : undefined;
}

function assertOneAllocationEach(ps: readonly PodObject[]): void {
  const allocs = allocations();
  for (const p of ps) {
    const mine = allocs.filter((a) => a.podUID === p.metadata.uid);
    assert.deepEqual(mine.map(addressOf), [p.status.podIP], `${p.metadata.name}: one allocation, its IP`);
  }
  const addrs = allocs.map(addressOf);
  assert.equal(new Set(addrs).size, addrs.length, 'no address allocated twice');
}

/** `ipamctl check -o`: its exit status and the report's problems (docs/design-cli.md "Report format"). */
function checkReport(): { status: number; kinds: string[]; findings: { kind: string; message: string }[] } {
  const dir = mkdtempSync(join(tmpdir(), 'bipam-check-'));
  try {
    const r = ipamctl(['check', '-o', join(dir, 'report.json')]);
    const report = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8')) as {
      problems: { kind: string; message: string }[];
    };
    return { status: r.status, kinds: report.problems.map((f) => f.kind), findings: report.problems };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

let steady: PodObject[] = [];

test('kubelet restart and containerd restart: pods keep their addresses, nothing allocated twice, check clean', async () => {
  const c = cluster();
  kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(spreadDeployment('steady', c.nodes.length, 1)));
  steady = await steadyPods(c.nodes.length);
  const ipOf = new Map(steady.map((p) => [p.metadata.uid, p.status.podIP]));
  const [first, second] = [c.nodes[0]!, c.nodes[1 % c.nodes.length]!];
  daemon('restart', `kubelet-${first}`);
  daemon('restart', `containerd-${second}`);
  for (const node of [first, second])
    await waitFor(`${node} Ready`, () => (nodeReady(node) === 'True' ? true : undefined), 90_000);
  for (const p of steady)
    await waitFor(`${p.metadata.name} answering exec with its address`, () => addressInside(p), 60_000).then(
      (ip) => assert.equal(ip, p.status.podIP, `${p.metadata.name} keeps its address`),
    );
  const now = await steadyPods(c.nodes.length);
  assert.deepEqual(new Map(now.map((p) => [p.metadata.uid, p.status.podIP])), ipOf, 'same pods, same IPs');
  assertOneAllocationEach(now);
  const check = ipamctl(['check']);
  assert.equal(check.status, 0, check.stdout + check.stderr);
});

test('a node whose kubelet is killed and whose Node is deleted keeps its addresses; check reports them', async () => {
  const c = cluster();
  const node = c.nodes.at(-1)!;
  const victim = steady.find((p) => p.spec.nodeName === node);
  assert.ok(victim, `a steady pod on ${node}`);
  const held = allocations().find((a) => a.podUID === victim.metadata.uid);
  assert.ok(held);
  daemon('kill', `kubelet-${node}`);
  kubectlOk(['delete', 'node', node]);
  try {
    // Until the pod garbage collector deletes the orphaned pod: pod-on-deleted-node; after:
    // leaked-pod-deleted. Either way the address stays allocated and check exits 1.
    const report = await waitFor(
      'check to report the deleted node’s allocation',
      () => {
        const r = checkReport();
        return r.findings.some((f) => f.message.includes(addressOf(held))) ? r : undefined;
      },
      60_000,
      2000,
    );
    assert.notEqual(report.status, 0);
    assert.ok(
      report.kinds.includes('pod-on-deleted-node') || report.kinds.includes('leaked-pod-deleted'),
      report.kinds.join(', '),
    );
    assert.ok(report.kinds.includes('block-affinity-deleted-node'), report.kinds.join(', '));
    await waitFor(
      `the pod garbage collector to delete ${victim.metadata.name}`,
      () => (pods(ns).some((p) => p.metadata.uid === victim.metadata.uid) ? undefined : true),
      120_000,
      2000,
    );
    assert.ok(
      allocations().some((a) => a.podUID === victim.metadata.uid && addressOf(a) === addressOf(held)),
      'the address stays allocated after its pod and node are gone',
    );
    assert.ok(checkReport().kinds.includes('leaked-pod-deleted'));
  } finally {
    // The node comes back: kubelet re-registers it, finds the sandbox of a pod that no longer
    // exists and tears it down — the runtime's DEL releases the address.
    daemon('start', `kubelet-${node}`);
  }
  await waitFor(`${node} Ready again`, () => (nodeReady(node) === 'True' ? true : undefined), 90_000);
  await waitFor(
    'the returning node to release the orphan’s address',
    () => (allocations().some((a) => a.podUID === victim.metadata.uid) ? undefined : true),
    120_000,
    2000,
  );
});
