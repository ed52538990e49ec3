/**
 * An admission policy's refusal of a real pod's ADD reaches the pod's sandbox Event whole, on the
 * real 3-node cluster after `helm install` (docs/design-plugin.md §Errors, docs/install.md
 * §Security).
 *
 * Which real ADD the policy refuses: the agent serves the ADD with its node's own token, so it
 * writes only its node's allocations and claims only for itself — the node-blocks policy never
 * refuses a well-behaved agent, and the plugin refuses a node-name mismatch itself before any
 * write. The one policy a real ADD meets is the claims policy (`<fullname>-node-claims`): a node
 * may claim a block only in a pool the controller lists `usable` in ConfigMap
 * `<fullname>-claim-pools`. A pool created while no controller runs is unlisted: the agent sees
 * the pool, the ADD claims a block in it, and the API server refuses the claim naming the node,
 * the block, the pool and the ConfigMap. So: the controller scaled to 0, a Manual pool created for
 * the test's namespace (its `ipam.blockipam.io/ippools` annotation), a pod pinned to node-1 →
 * its FailedCreatePodSandBox Event carries the policy's name and its message to the end; no block
 * of the pool exists. Then the controller scaled back: it lists the pool, and the same pod gets
 * an address from it (the kubelet retries the sandbox).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cluster, kubectl, kubectlOk } from '../helpers/cluster.ts';
import { busybox, inCidr, pods, waitFor } from './blockipam.ts';
import { chartFixture, NAMESPACE, PREFIX } from './chart.ts';
import { AGENT_METRICS_PORT, scrape, sum } from './metrics.ts';

const ns = 'bipam-refusal';
const POOL = 'bipam-unlisted';
const CIDR = '10.251.0.0/26';
const CONFIGMAP = `${PREFIX}-claim-pools`;
const CONTROLLER = `deployment/${PREFIX}-controller`;

chartFixture(ns, {
  beforeInstall: () => kubectlOk(['annotate', 'namespace', ns, `ipam.blockipam.io/ippools=["${POOL}"]`]),
});

/** The pools ConfigMap `<fullname>-claim-pools` lists (its data keys). */
const listed = (): string[] =>
  Object.keys(
    (
      JSON.parse(kubectlOk(['-n', NAMESPACE, 'get', 'configmap', CONFIGMAP, '-o', 'json'])) as {
        data?: Record<string, string>;
      }
    ).data ?? {},
  );

/** The FailedCreatePodSandBox messages of pod `name`. */
function sandboxEvents(name: string): string[] {
  const list = JSON.parse(
    kubectlOk([
      '-n',
      ns,
      'get',
      'events',
      '--field-selector',
      `involvedObject.name=${name},reason=FailedCreatePodSandBox`,
      '-o',
      'json',
    ]),
  ) as { items: { message: string }[] };
  return list.items.map((e) => e.message);
}

test('a claim the policy refuses: the pod’s sandbox Event carries the policy’s reason whole', async (t) => {
  const [n1] = cluster().nodes as [string];
  kubectlOk(['-n', NAMESPACE, 'scale', CONTROLLER, '--replicas=0']);
  await waitFor(
    'no controller pod',
    () => {
      const r = kubectlOk([
        '-n',
        NAMESPACE,
        'get',
        'pods',
        '-l',
        'app.kubernetes.io/component=controller',
        '-o',
        'name',
      ]);
      return r.trim() === '' ? true : undefined;
    },
    120_000,
  );
  kubectlOk(
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'ipam.blockipam.io/v1alpha1',
      kind: 'IPPool',
      metadata: { name: POOL },
      spec: { cidr: CIDR, blockSize: 28, assignmentMode: 'Manual' },
    }),
  );
  assert.ok(!listed().includes(POOL), `${CONFIGMAP} lists ${POOL} with no controller running`);
  kubectlOk(
    ['-n', ns, 'apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'refused', labels: { app: 'refused' } },
      spec: {
        nodeName: n1,
        terminationGracePeriodSeconds: 0,
        containers: [busybox('refused', ['sleep', '3600'])],
      },
    }),
  );
  const messages = await waitFor(
    'a FailedCreatePodSandBox Event naming the claims policy',
    () => {
      const m = sandboxEvents('refused').filter((e) => e.includes(`${PREFIX}-node-claims`));
      return m.length > 0 ? m : undefined;
    },
    180_000,
    2000,
  ).catch((e: unknown) => {
    throw new Error(`${(e as Error).message}; sandbox events: ${sandboxEvents('refused').join('\n')}`);
  });
  const message = messages[0] ?? '';
  t.diagnostic(`sandbox event: ${message}`);
  // the policy, the status, and its message to the end: node, block, pool, ConfigMap
  assert.match(message, new RegExp(`ValidatingAdmissionPolicy '${PREFIX}-node-claims'`));
  assert.match(
    message,
    new RegExp(
      `blockipam: node ${n1} may claim IPAMBlock 10-251-0-\\d+-28 only in a usable IPPool; ` +
        // the quotes may come escaped (\") through the runtime's error text
        `label ipam\\.blockipam\\.io/pool is \\\\?"${POOL}\\\\?", which the controller has not listed in ` +
        `ConfigMap ${NAMESPACE}/${CONFIGMAP}`,
    ),
  );
  assert.doesNotMatch(message, /characters cut/);
  // node-1's agent counted the failed ADD as refused
  const samples = scrape(cluster().nodeIps[0] ?? '', AGENT_METRICS_PORT);
  assert.ok(
    (sum(samples, 'blockipam_agent_cni_add_failures_total', { reason: 'refused' }) ?? 0) > 0,
    'blockipam_agent_cni_add_failures_total{reason="refused"} on node-1 counted none',
  );
  // refused before anything was written: no block of the pool
  const blocks = JSON.parse(kubectlOk(['get', 'ipamblocks', '-o', 'json'])) as {
    items: { spec: { cidr: string } }[];
  };
  assert.deepEqual(
    blocks.items.filter((b) => inCidr(b.spec.cidr.split('/')[0] ?? '', CIDR)),
    [],
  );
});

test('the controller back: it lists the pool, and the same pod gets an address from it', async () => {
  kubectlOk(['-n', NAMESPACE, 'scale', CONTROLLER, '--replicas=2']);
  await waitFor(`${CONFIGMAP} listing ${POOL}`, () => (listed().includes(POOL) ? true : undefined), 180_000);
  const pod = await waitFor(
    'the pod Running with an address',
    () => pods(ns, 'app=refused').find((p) => p.status.phase === 'Running' && p.status.podIP),
    300_000,
    2000,
  );
  assert.ok(inCidr(pod.status.podIP ?? '', CIDR), `${pod.status.podIP} is not in ${CIDR}`);
  kubectl(['-n', ns, 'delete', 'pod', 'refused', '--wait=false']);
});
