/**
 * An orphaning delete of the agent DaemonSet is no uninstall (docs/design-agent.md §Uninstall),
 * on the real 3-node cluster after `helm install`: `kubectl delete ds --cascade=orphan` (the
 * routine first step of a selector change), a pod started while no DaemonSet exists, then the
 * DaemonSet brought back by `helm upgrade` (which re-creates it; the same selector adopts the
 * running agents). Throughout, every node keeps its conflist (the file on each node, sampled)
 * and its Ready condition; no agent logs a removal; the agents are the same pods afterwards.
 * Then a selector change: the DaemonSet orphaned and created again with another selector; its
 * pods wait while the orphaned agents hold the host port, and each orphan deleted hands its node
 * over — every node keeps its conflist and stays Ready throughout.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, test } from 'node:test';
import { cluster, kubectl, kubectlOk } from '../helpers/cluster.ts';
import { CHART } from '../charts/helm.ts';
import { busybox, pods, waitFor, watchNodes } from './blockipam.ts';
import {
  chartFixture,
  helm,
  harnessValues,
  NAMESPACE,
  PLUGIN_LOG,
  PREFIX,
  RELEASE,
  waitRolledOut,
} from './chart.ts';

const ns = 'bipam-orphan';
const AGENT = `${PREFIX}-agent`;
const AGENT_PODS = `app.kubernetes.io/instance=${RELEASE},app.kubernetes.io/component=agent`;
const chart = chartFixture(ns);
after(() => {
  // the selector-change test's DaemonSet is not Helm's (created by kubectl, another selector):
  // gone with its pods, so the next file's helm install finds no agent DaemonSet or pod
  kubectl(['-n', NAMESPACE, 'delete', 'daemonset', AGENT, '--ignore-not-found', '--wait=true']);
  kubectl(['-n', NAMESPACE, 'delete', 'pods', '-l', 'handover=new', '--ignore-not-found', '--wait=true']);
  kubectl(['-n', NAMESPACE, 'delete', 'pods', '-l', AGENT_PODS, '--ignore-not-found', '--wait=true']);
});

const conflistOf = (node: string): string => `${cluster().runDir}/${node}/cni/net.d/10-blockipam.conflist`;

/** The agent pods' uids by node. */
function agentPods(): Map<string, string> {
  return new Map(pods(NAMESPACE, AGENT_PODS).map((p) => [p.spec.nodeName ?? '', p.metadata.uid]));
}

test('kubectl delete ds --cascade=orphan, a pod started meanwhile, helm upgrade: no node loses its CNI', async () => {
  const nodes = cluster().nodes;
  for (const node of nodes) assert.ok(existsSync(conflistOf(node)), `${node} has its conflist`);
  const before = agentPods();
  assert.equal(before.size, nodes.length);
  const watching = watchNodes();
  try {
    kubectlOk(['-n', NAMESPACE, 'delete', 'daemonset', AGENT, '--cascade=orphan']);
    await waitFor(
      'the DaemonSet gone (the garbage collector removed the orphan finalizer)',
      () => (kubectl(['-n', NAMESPACE, 'get', 'daemonset', AGENT]).status !== 0 ? true : undefined),
      120_000,
    );
    // a pod on the node of each agent while no DaemonSet exists: the CNI still serves
    for (const node of nodes) kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(meanwhile(node)));
    await waitFor(
      'a pod Running with an address on every node',
      () => {
        const running = pods(ns).filter((p) => p.status.phase === 'Running' && p.status.podIP);
        return running.length === nodes.length ? running : undefined;
      },
      180_000,
    );
    const values = [`image.tag=${chart.image().ref.split(':')[1] ?? ''}`, `plugin.logFile=${PLUGIN_LOG}`];
    const upgrade = helm(4, [
      ...['upgrade', RELEASE, CHART, '--namespace', NAMESPACE, ...harnessValues()],
      ...['--set', values.join(',')],
    ]);
    assert.equal(upgrade.status, 0, `helm upgrade:\n${upgrade.stdout}\n${upgrade.stderr}`);
    waitRolledOut();
  } finally {
    const lost = await watching.stop();
    assert.deepEqual(lost, [], 'every node kept its conflist and stayed Ready');
  }
  // the same selector: the new DaemonSet adopted the running agents, none restarted
  assert.deepEqual(agentPods(), before);
  const logs = kubectlOk(['-n', NAMESPACE, 'logs', `--selector=${AGENT_PODS}`, '--tail=-1', '--prefix']);
  assert.doesNotMatch(logs, /conflist and plugin kubeconfig removed/);
  for (const node of nodes) assert.ok(existsSync(conflistOf(node)), `${node} has its conflist`);
});

interface DaemonSetObject {
  metadata: Record<string, unknown>;
  spec: {
    selector: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string> } };
  };
  status?: unknown;
}

test('a selector change: the new pods wait for the orphans’ host port; each orphan deleted hands its node over', async () => {
  const nodes = cluster().nodes;
  const old = JSON.parse(
    kubectlOk(['-n', NAMESPACE, 'get', 'daemonset', AGENT, '-o', 'json']),
  ) as DaemonSetObject;
  const orphans = agentPods();
  const watching = watchNodes();
  try {
    kubectlOk(['-n', NAMESPACE, 'delete', 'daemonset', AGENT, '--cascade=orphan']);
    await waitFor(
      'the DaemonSet gone',
      () => (kubectl(['-n', NAMESPACE, 'get', 'daemonset', AGENT]).status !== 0 ? true : undefined),
      120_000,
    );
    const changed: DaemonSetObject = {
      ...old,
      metadata: { name: AGENT, namespace: NAMESPACE, labels: old.metadata['labels'] },
      spec: {
        ...old.spec,
        selector: { matchLabels: { ...old.spec.selector.matchLabels, handover: 'new' } },
        template: {
          ...old.spec.template,
          metadata: {
            ...old.spec.template.metadata,
            labels: { ...old.spec.template.metadata.labels, handover: 'new' },
          },
        },
      },
    };
    delete changed.status;
    kubectlOk(['create', '-f', '-'], JSON.stringify(changed));
    // the orphans hold the agent's host port: the new pods are not scheduled
    await waitFor(
      'a new agent pod per node, unschedulable',
      () => {
        const fresh = pods(NAMESPACE, 'handover=new');
        const waiting = fresh.filter((p) =>
          p.status.conditions?.some((c) => c.type === 'PodScheduled' && c.status === 'False'),
        );
        return fresh.length === nodes.length && waiting.length === nodes.length ? true : undefined;
      },
      120_000,
    );
    for (const [node, uid] of orphans) {
      const orphan = pods(NAMESPACE, AGENT_PODS).find((p) => p.metadata.uid === uid);
      assert.ok(orphan, `the orphaned agent on ${node}`);
      kubectlOk(['-n', NAMESPACE, 'delete', 'pod', orphan.metadata.name]);
      await waitFor(
        `the new agent on ${node} Ready`,
        () =>
          pods(NAMESPACE, 'handover=new').some(
            (p) =>
              p.spec.nodeName === node &&
              p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
          )
            ? true
            : undefined,
        180_000,
      );
    }
  } finally {
    const lost = await watching.stop();
    assert.deepEqual(lost, [], 'every node kept its conflist and stayed Ready');
  }
});

function meanwhile(node: string): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `meanwhile-${node}`, namespace: ns },
    spec: {
      nodeName: node,
      terminationGracePeriodSeconds: 0,
      containers: [busybox('sleep', ['sleep', '3600'])],
    },
  };
}
