/**
 * The uninstall signal's shutdown confirmation under the chart's own RBAC on the real API server
 * (block-controller/agent/install/confirm.ts): the agent's watch of its DaemonSet missed the
 * deletion (it was reconnecting), so at shutdown one GET decides — with the agent's real
 * credential (the node ServiceAccount's token bound to its pod) and the plugin's (the plugin
 * ServiceAccount's, bound to the Node). The agent's Role removed while the DaemonSet is there (a
 * credential problem): the GET is refused, the plugin's credential still accepted → not gone.
 * `helm uninstall`'s deletions (the DaemonSet, then the Role, bindings and ServiceAccounts): the
 * GET is refused and so is the plugin's credential → gone. A Node deleted while its kubelet runs
 * (the agent's pod garbage-collected with it): both credentials refused too, but the plugin's
 * Node is gone → not gone. With the watch running: `kubectl delete --cascade=orphan` (the
 * `orphan` finalizer, then its removal by the garbage collector — done by hand here: no
 * controller-manager runs) → never gone, neither on the events nor at shutdown (404).
 */
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { watchOwner } from '../../block-controller/agent/install/owner.ts';
import { connectKube, createLogger } from '../../block-controller/shared/index.ts';
import type { KubeConnection } from '../../block-controller/shared/index.ts';
import { admin, adminOk, as, ChartIdentities, eventually } from './identities.ts';

const NS = 'chart-uninstall';
const RELEASE = 'unc'; // objects: unc-blockipam-*
const chart = new ChartIdentities(NS, RELEASE);
const NODE = 'unc-n1';
const POD = 'unc-agent';
/** The agent DaemonSet's name, as the chart names it (its Role admits only this name). */
const OWNER = `${RELEASE}-blockipam-agent`;
const DAEMONSET_ROLE = `${RELEASE}-blockipam-agent-daemonset`;
const log = createLogger({ component: 'test', level: 'error' });

function daemonSet(): object {
  const labels = { app: OWNER };
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: OWNER, namespace: NS },
    spec: {
      selector: { matchLabels: labels },
      template: { metadata: { labels }, spec: { containers: [{ name: 'agent', image: 'none' }] } },
    },
  };
}

describe('the uninstall signal confirmed at shutdown, under the chart’s RBAC', () => {
  let agentKubeconfig: string;
  let pluginKubeconfig: string;
  let connection: KubeConnection;
  before(() => {
    chart.install([NODE], [[POD, chart.nodeSA, NODE]]);
    adminOk(['apply', '-f', '-'], daemonSet());
    agentKubeconfig = chart.credential(chart.nodeSA, POD);
    pluginKubeconfig = chart.nodeCredential(chart.pluginSA, NODE);
    connection = connectKube({ kubeconfig: agentKubeconfig });
  });
  after(() => {
    connection?.close();
    chart.uninstall([NODE]);
  });

  /** The watch as the agent opens it; stopped at once: the deletion events are missed. */
  async function missedWatch(gone: string[], confirmAttempts?: number) {
    const watch = await watchOwner({
      ...(confirmAttempts === undefined ? {} : { confirmAttempts }),
      namespace: NS,
      name: OWNER,
      connection,
      log,
      onGone: (reason) => gone.push(reason),
      pluginKubeconfig,
    });
    await watch.stop();
    return watch;
  }

  test('the agent’s Role removed, the DaemonSet there: refused, the plugin accepted → not gone', async () => {
    const gone: string[] = [];
    const watch = await missedWatch(gone, 3);
    const binding = adminOk(['get', 'rolebinding', DAEMONSET_ROLE, '-n', NS, '-o', 'json']);
    adminOk(['delete', 'rolebinding', DAEMONSET_ROLE, '-n', NS]);
    await eventually(
      () => assert.notEqual(as(agentKubeconfig, ['get', 'daemonset', OWNER, '-n', NS]).status, 0),
      'the agent refused',
    );
    try {
      assert.equal(await watch.confirmGone(), false);
      assert.deepEqual(gone, []);
    } finally {
      const restored = JSON.parse(binding) as { metadata: Record<string, unknown> };
      restored.metadata = { name: DAEMONSET_ROLE, namespace: NS, labels: restored.metadata['labels'] };
      adminOk(['apply', '-f', '-'], restored);
    }
    await eventually(
      () => assert.equal(as(agentKubeconfig, ['get', 'daemonset', OWNER, '-n', NS]).status, 0),
      'the agent allowed again',
    );
  });

  test('kubectl delete --cascade=orphan while the watch runs, then re-created: never gone', async () => {
    const lines = new PassThrough();
    const messages: string[] = [];
    const waiters: [string, () => void][] = [];
    lines.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n').filter(Boolean)) {
        const message = (JSON.parse(line) as { message: string }).message;
        messages.push(message);
        for (const [want, resolve] of waiters) if (message === want) resolve();
      }
    });
    /** Resolves once `message` is logged — or the signal fires (the waits end either way). */
    const logged = (message: string): Promise<void> =>
      messages.includes(message) || gone.length > 0
        ? Promise.resolve()
        : new Promise((resolve) => {
            waiters.push([message, resolve], ['gone', resolve]);
          });
    const gone: string[] = [];
    const watch = await watchOwner({
      namespace: NS,
      name: OWNER,
      connection,
      log: createLogger({ component: 'test', level: 'info', stream: lines }),
      onGone: (reason) => {
        gone.push(reason);
        for (const [want, resolve] of waiters) if (want === 'gone') resolve();
      },
      pluginKubeconfig,
    });
    try {
      adminOk(['delete', 'daemonset', OWNER, '-n', NS, '--cascade=orphan', '--wait=false']);
      await logged('own DaemonSet deleted with --cascade=orphan: its pods stay, the conflist too');
      assert.deepEqual(gone, []);
      assert.equal(watch.gone, false);
      // the garbage collector's part, once the pods no longer name the DaemonSet as their owner
      adminOk([
        'patch',
        'daemonset',
        OWNER,
        '-n',
        NS,
        '--type=merge',
        '-p',
        '{"metadata":{"finalizers":null}}',
      ]);
      await logged('own DaemonSet gone after --cascade=orphan: not an uninstall');
      assert.equal(watch.gone, false);
      assert.deepEqual(gone, []);
    } finally {
      await watch.stop();
    }
    // the orphaned agent stopped before a DaemonSet returns: the GET's 404 proves nothing
    assert.equal(await watch.confirmGone(), false);
    assert.deepEqual(gone, []);
    adminOk(['apply', '-f', '-'], daemonSet());
  });

  test('a Node deleted while its kubelet runs, its agent pod garbage-collected: both refused → not gone', async () => {
    const gone: string[] = [];
    const boundUid = chart.uids[NODE];
    const watch = await watchOwner({
      namespace: NS,
      name: OWNER,
      connection,
      log,
      onGone: (reason) => gone.push(reason),
      pluginKubeconfig,
      // as the agent's Node watch sees it: the Node now against the one the plugin's token names
      pluginNodeGone: () =>
        admin(['get', 'node', NODE, '-o', 'jsonpath={.metadata.uid}']).stdout !== boundUid,
      confirmAttempts: 3,
    });
    await watch.stop();
    adminOk(['delete', 'node', NODE]);
    adminOk(['delete', 'pod', POD, '-n', NS, '--grace-period=0', '--force']);
    await eventually(
      () => assert.notEqual(as(agentKubeconfig, ['get', 'daemonset', OWNER, '-n', NS]).status, 0),
      'the agent refused',
    );
    await eventually(
      () => assert.notEqual(as(pluginKubeconfig, ['auth', 'whoami']).status, 0),
      'the plugin refused',
    );
    assert.equal(await watch.confirmGone(), false, 'deleted');
    // the kubelet registers the Node again (another uid): the old token's refusal still proves nothing
    adminOk(['apply', '-f', '-'], { apiVersion: 'v1', kind: 'Node', metadata: { name: NODE } });
    assert.equal(await watch.confirmGone(), false, 'registered again');
    assert.deepEqual(gone, []);
    // the pod and the credentials again, for the next test
    adminOk(['apply', '-f', '-'], {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: POD, namespace: NS },
      spec: { nodeName: NODE, serviceAccountName: chart.nodeSA, containers: [{ name: 'c', image: 'none' }] },
    });
    chart.uids[NODE] = adminOk(['get', 'node', NODE, '-o', 'jsonpath={.metadata.uid}']);
    chart.uids[POD] = adminOk(['get', 'pod', POD, '-n', NS, '-o', 'jsonpath={.metadata.uid}']);
    agentKubeconfig = chart.credential(chart.nodeSA, POD);
    pluginKubeconfig = chart.nodeCredential(chart.pluginSA, NODE);
    connection.close();
    connection = connectKube({ kubeconfig: agentKubeconfig });
  });

  test('helm uninstall’s deletions while the watch reconnects: refused, the plugin refused too → gone', async () => {
    const gone: string[] = [];
    const watch = await missedWatch(gone);
    // as `helm uninstall` deletes them: the workload first, then RBAC, then ServiceAccounts
    adminOk(['delete', 'daemonset', OWNER, '-n', NS]);
    adminOk(['delete', 'rolebindings,roles', '-n', NS, '-l', `app.kubernetes.io/instance=${RELEASE}`]);
    admin(['delete', 'clusterrolebindings', '-l', `app.kubernetes.io/instance=${RELEASE}`]);
    adminOk(['delete', 'serviceaccounts', chart.nodeSA, chart.pluginSA, chart.controllerSA, '-n', NS]);
    assert.equal(await watch.confirmGone(), true);
    assert.equal(gone.length, 1);
    assert.match(gone[0] ?? '', /refused at shutdown, and so is the plugin's credential/);
  });
});
