/**
 * The node agent away longer than the plugin's token lives (docs/design-plugin.md §Deletion
 * queue), on the real 3-node cluster after `helm install`: the agent DaemonSet kept off node-3
 * (a required node affinity), and the plugin's token on node-3 expired. The API server will not
 * issue a token for less than 10 minutes, so the test stands in for the wait: it rewrites the
 * token's `exp` claim into the past, which the API server refuses with the same 401 as an expired
 * token (the signature no longer matches; both fail the service-account authenticator).
 * Then:
 *  - every pod deleted on node-3 goes away (its DEL answered success): the DELs are queued on the
 *    node and the addresses stay allocated;
 *  - an ADD there fails with CNI 105 saying since when the agent has been away and what to do;
 *  - once the agent is back (the affinity removed), it writes a fresh token and replays the
 *    queue: every queued DEL released, the queue empty, node-3 Ready, the ledger exact and
 *    `ipamctl check` clean.
 */
import assert from 'node:assert/strict';
import { readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { before, test } from 'node:test';
import { cluster, inNode, kubectl, kubectlOk } from '../helpers/cluster.ts';
import {
  allocationsOf,
  checkClean,
  nodesReady,
  pinnedDeployment,
  pods,
  podsRunning,
  waitFor,
} from './blockipam.ts';
import { chartFixture, NAMESPACE, pluginLogOf, PREFIX } from './chart.ts';
import { agentOn, assertLedger, pluginLines, sizeOf, standalonePlugin } from './faults.ts';

const ns = 'bipam-away';
const AGENT = `${PREFIX}-agent`;
/** The agent's deletion queue on a node: `del-queue` beside its IPAM socket (chart agent.runDir). */
const QUEUE = '/var/run/blockipam/agent/del-queue';
let node = '';

chartFixture(ns);
before(() => {
  node = cluster().nodes[2] ?? 'node-3';
});

/** The plugin's kubeconfig on `node`, host path (the chart's cni.confDir). */
const kubeconfigOf = (n: string): string => `${cluster().runDir}/${n}/cni/net.d/blockipam-kubeconfig`;

/** Files in the deletion queue on `node`. */
function queued(n: string): string[] {
  const r = inNode(n, 'sh', ['-c', `ls -1 ${QUEUE} 2>/dev/null || true`]);
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split('\n').filter((l) => l.endsWith('.json'));
}

/** The agent's pod on `node`, or undefined when none is scheduled there. */
function agentPodOn(n: string): string | undefined {
  const list = JSON.parse(
    kubectlOk([
      ...['-n', NAMESPACE, 'get', 'pods', '-l', 'app.kubernetes.io/component=agent'],
      ...['--field-selector', `spec.nodeName=${n}`, '-o', 'json'],
    ]),
  ) as { items: { metadata: { name: string } }[] };
  return list.items[0]?.metadata.name;
}

/** `token` with its `exp` claim `seconds` in the past (the signature kept, so no longer valid). */
function expired(token: string, seconds: number): string {
  const [header, payload, signature] = token.split('.');
  assert.ok(header && payload && signature, 'the plugin token is a JWT');
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
  const now = Math.floor(Date.now() / 1000);
  const forged = { ...claims, exp: now - seconds, nbf: now - 2 * seconds, iat: now - 2 * seconds };
  return [header, Buffer.from(JSON.stringify(forged)).toString('base64url'), signature].join('.');
}

test('the agent away past its token: DELs queued and answered, ADD explains, the agent back replays', async (t) => {
  kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(pinnedDeployment('away', node, 6)));
  const started = await podsRunning(ns, 'away', 6);
  assert.equal(allocationsOf(ns).length, 6);

  // the agent kept off the node: the DaemonSet's pods must not run there
  const affinity = {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'NotIn', values: [node] }] },
        ],
      },
    },
  };
  kubectlOk([
    ...['-n', NAMESPACE, 'patch', 'daemonset', AGENT, '--type=merge'],
    ...['-p', JSON.stringify({ spec: { template: { spec: { affinity } } } })],
  ]);
  await waitFor(
    `no agent pod on ${node}`,
    () => (agentPodOn(node) === undefined ? true : undefined),
    180_000,
  );
  // ... for longer than its token lives: the token expired an hour ago, the file last written then
  const file = kubeconfigOf(node);
  const doc = JSON.parse(readFileSync(file, 'utf8')) as { users: { user: { token: string } }[] };
  const user = doc.users[0]?.user;
  assert.ok(user, 'the plugin kubeconfig has a token user');
  user.token = expired(user.token, 3600);
  writeFileSync(file, `${JSON.stringify(doc, null, 2)}\n`);
  const lastWritten = new Date(Date.now() - 2 * 3600_000);
  utimesSync(file, lastWritten, lastWritten);
  const offset = sizeOf(pluginLogOf(node));

  // three pods deleted (the Deployment scaled 6 → 3): each goes away, its DEL queued, its
  // address still held
  const tDelete = Date.now();
  kubectlOk(['-n', ns, 'scale', 'deployment/away', '--replicas=3']);
  const left = await waitFor(
    'three pods gone (their sandboxes torn down)',
    () => {
      const now = pods(ns);
      return now.length === 3 ? new Set(now.map((p) => p.metadata.uid)) : undefined;
    },
    180_000,
  );
  const gone = started.filter((p) => !left.has(p.metadata.uid));
  assert.equal(gone.length, 3);
  t.diagnostic(`3 pods gone ${((Date.now() - tDelete) / 1000).toFixed(1)} s after the delete`);
  const dels = pluginLines(node, offset).filter((l) => l.cmd === 'DEL');
  assert.deepEqual(
    dels.filter((l) => l.level === 'error').map((l) => `${l.code}: ${l.msg}`),
    [],
    'no DEL failed',
  );
  const files = queued(node);
  t.diagnostic(`${node}: ${files.length} DELs queued in ${QUEUE}`);
  assert.ok(files.length >= 3, `the deleted pods' DELs are queued: ${files.join(' ')}`);
  const stillHeld = allocationsOf(ns).filter((a) => gone.some((p) => p.metadata.uid === a.podUID));
  assert.equal(stillHeld.length, 3, 'the queued addresses stay allocated until the agent replays them');

  // an ADD meanwhile: refused credential, explained
  const [add] = await standalonePlugin(node, 'ADD', 'away-add', 1, 'agent');
  assert.ok(add);
  assert.equal(add.rc, 1, add.stdout);
  const error = JSON.parse(add.stdout) as { code: number; msg: string; details: string };
  assert.equal(error.code, 105);
  assert.equal(error.msg, "the plugin's credential was refused and the node agent is away");
  assert.match(error.details, new RegExp(`last wrote it at ${lastWritten.toISOString().slice(0, 16)}`));
  assert.match(error.details, /its token expires at .*it has not run on node/);
  assert.match(error.details, /pod deletions meanwhile are queued on the node/);

  // the agent back: a fresh token, the queue replayed
  kubectlOk([
    ...['-n', NAMESPACE, 'patch', 'daemonset', AGENT, '--type=json'],
    ...['-p', JSON.stringify([{ op: 'remove', path: '/spec/template/spec/affinity' }])],
  ]);
  kubectlOk(['-n', NAMESPACE, 'rollout', 'status', `daemonset/${AGENT}`, '--timeout=300s']);
  const tBack = Date.now();
  await waitFor(
    'the queue replayed: the three addresses released, the queue empty',
    () =>
      allocationsOf(ns).filter((a) => gone.some((p) => p.metadata.uid === a.podUID)).length === 0 &&
      queued(node).length === 0
        ? true
        : undefined,
    180_000,
  );
  t.diagnostic(`queue replayed ${((Date.now() - tBack) / 1000).toFixed(1)} s after the agent's rollout`);
  const logs = kubectlOk(['-n', NAMESPACE, 'logs', agentOn(node).pod]);
  const replayed = logs.split('\n').filter((l) => l.includes('queued DEL replayed'));
  assert.ok(replayed.length >= 3, `the agent replayed the queue:\n${replayed.join('\n')}`);
  await nodesReady(180_000);
  assert.equal(new Set(assertLedger(ns, await podsRunning(ns, 'away', 3))).size, 3);
  kubectl(['-n', ns, 'scale', 'deployment/away', '--replicas=0']);
  await podsRunning(ns, 'away', 0);
  await checkClean();
});
