/**
 * A Node deleted while its kubelet runs loses nothing (docs/design-controller.md §1 step 2,
 * docs/design-agent.md §Uninstall), on the real 3-node cluster after `helm install`: `kubectl
 * delete node` with pods running there. The pod garbage collector deletes the node's pods, the
 * agent's among them, and the kubelet stops the agent — the node keeps its conflist. (Whether
 * the agent's shutdown GET is already refused depends on the API server's 10 s token cache;
 * test/charts/uninstall-confirm.int.test.ts pins the refused case down.) The controller
 * quarantines the node: its blocks stay affine and its addresses allocated, and pods started on
 * the other nodes meanwhile get none of them — with the quarantine off
 * (`controller.nodeGoneGraceSeconds=0`) the block is gone by then. A kubelet restart registers
 * the Node again: Ready, the same blocks its own.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import { cluster, daemon, inNode, kubectlOk } from '../helpers/cluster.ts';
import {
  addressOf,
  allocations,
  nodeReady,
  pinnedDeployment,
  pods,
  podsRunning,
  waitFor,
} from './blockipam.ts';
import { chartFixture, NAMESPACE, PREFIX } from './chart.ts';
import { agentOn } from './faults.ts';

const ns = 'bipam-rereg';

chartFixture(ns);

/** The names of the blocks affine to `node`. */
function affineBlocks(node: string): string[] {
  const list = JSON.parse(kubectlOk(['get', 'ipamblocks', '-o', 'json'])) as {
    items: { metadata: { name: string }; spec: { affinity: string | null } }[];
  };
  return list.items
    .filter((b) => b.spec.affinity === node)
    .map((b) => b.metadata.name)
    .sort();
}

/** Whether a task of container `id` runs in `node`'s containerd. */
function taskRuns(node: string, id: string): boolean {
  const tasks = inNode(node, 'sh', ['-c', 'ctr --address "$CONTAINERD" -n k8s.io task ls']);
  assert.equal(tasks.status, 0, tasks.stderr);
  return tasks.stdout.split('\n').some((l) => l.startsWith(id));
}

test('kubectl delete node while its kubelet runs: its CNI stays, its blocks stay its own, it comes back', async () => {
  const c = cluster();
  const node = c.nodes[2] ?? 'node-3';
  const others = c.nodes.filter((n) => n !== node);
  const conflist = `${c.runDir}/${node}/cni/net.d/10-blockipam.conflist`;
  kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(pinnedDeployment('there', node, 3)));
  await podsRunning(ns, 'there', 3);
  const held = allocations()
    .filter((a) => a.namespace === ns && a.node === node)
    .map(addressOf)
    .sort();
  assert.equal(held.length, 3);
  const blocks = affineBlocks(node);
  assert.ok(blocks.length > 0);
  const agent = agentOn(node);
  kubectlOk(['delete', 'node', node]);
  try {
    await waitFor(
      `the agent on ${node} stopped (its pod garbage-collected)`,
      () => (taskRuns(node, agent.containerID) ? undefined : true),
      300_000,
      1000,
    );
    assert.ok(existsSync(conflist), `${node} keeps its conflist after its agent stopped`);
    // quarantined: affine, its addresses allocated, none handed to the pods started elsewhere
    for (const other of others)
      kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(pinnedDeployment(`on-${other}`, other, 4)));
    const elsewhere = [
      ...(await podsRunning(ns, `on-${others[0] ?? ''}`, 4)),
      ...(await podsRunning(ns, `on-${others[1] ?? ''}`, 4)),
    ];
    for (const p of elsewhere)
      assert.ok(!held.includes(p.status.podIP ?? ''), `${p.metadata.name} got ${p.status.podIP ?? ''}`);
    assert.deepEqual(affineBlocks(node), blocks);
    const stillHeld = new Set(allocations().map(addressOf));
    for (const ip of held) assert.ok(stillHeld.has(ip), `${ip} still allocated`);
  } finally {
    daemon('restart', `kubelet-${node}`);
  }
  await waitFor(`${node} Ready again`, () => (nodeReady(node) === 'True' ? true : undefined), 180_000, 1000);
  kubectlOk(['-n', NAMESPACE, 'rollout', 'status', `daemonset/${PREFIX}-agent`, '--timeout=300s']);
  assert.ok(existsSync(conflist));
  assert.deepEqual(affineBlocks(node), blocks, 'the same blocks, its own again');
  assert.ok(pods(ns).length > 0);
});
