/**
 * `helm install` of charts/blockipam on the real 3-node cluster, with the image imported into
 * every node, then the product's life in order (one cluster, steps share state):
 * agents Ready on every node and the plugin installed by them (not by the test); a Deployment's
 * pods Running with addresses from their nodes' blocks; pods on different nodes ping each other
 * (the agents' routes); `ipamctl check` clean; scale 0 → 30 → 0; `helm upgrade` (Helm 4 over
 * Helm 3's release) with changed values keeps every allocation; a node removed (kubelet stopped,
 * Node deleted) → the controller releases its blocks after the node's quarantine (shortened to
 * 30 s by the chart's value); `helm uninstall` leaves the CRDs and the
 * IPAM data, as docs/install.md says; a fresh `helm install` with Helm 4 over that kept data
 * (the pools adopted by the new release) → agents Ready on every node and a pod addressed from
 * its node's block, then uninstalled again. The chart sets no NODE_EXTRA_CA_CERTS: the agents'
 * and controllers' watches trust the cluster CA by themselves (their readiness needs the watches).
 */
import assert from 'node:assert/strict';
import { existsSync, lstatSync, readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { cluster, daemon, kubectl, kubectlOk } from '../helpers/cluster.ts';
import { CHART } from '../charts/helm.ts';
import {
  allocations,
  checkClean,
  inCidr,
  ledger,
  nodeReady,
  nodesReady,
  podsRunning,
  spreadDeployment,
  waitFor,
} from './blockipam.ts';
import type { PodObject } from './blockipam.ts';
import {
  helm,
  installWithPluginLog,
  NAMESPACE,
  PLUGIN_LOG,
  pluginLogOf,
  PREFIX,
  RELEASE,
  setUpChart,
  tearDownChart,
} from './chart.ts';
import type { ChartImage } from './chart.ts';

const ns = 'bipam-chart';
const app = 'chart-spread';
let image: ChartImage;

function helmOk(major: 3 | 4, args: readonly string[]): string {
  const r = helm(major, args);
  assert.equal(r.status, 0, `helm ${major} ${args.join(' ')}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

function scale(replicas: number): void {
  kubectlOk(['-n', ns, 'scale', `deployment/${app}`, `--replicas=${replicas}`]);
}

/** Waits for exactly `count` Running pods with an address, none terminating. */
const running = (count: number, timeoutMs?: number): Promise<PodObject[]> =>
  podsRunning(ns, app, count, timeoutMs);

function rollout(kind: string, name: string): void {
  kubectlOk(['-n', NAMESPACE, 'rollout', 'status', `${kind}/${name}`, '--timeout=300s']);
}

before(() => {
  image = setUpChart(ns);
});
after(() => tearDownChart(ns));

/** The plugin's `done` lines of ADDs on `node`, from its log file on that node. */
function pluginAdds(node: string): { containerID?: string; path?: string }[] {
  const file = pluginLogOf(node);
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { msg?: string; cmd?: string; containerID?: string; path?: string })
    .filter((l) => l.msg === 'done' && l.cmd === 'ADD');
}

/** Waits for the agents' rollout; asserts one agent pod on every node. */
function agentsOnEveryNode(): void {
  rollout('daemonset', `${PREFIX}-agent`);
  const agents = JSON.parse(
    kubectlOk(['-n', NAMESPACE, 'get', 'pods', '-l', 'app.kubernetes.io/component=agent', '-o', 'json']),
  ) as { items: PodObject[] };
  assert.deepEqual(agents.items.map((p) => p.spec.nodeName).sort(), [...cluster().nodes].sort());
}

test('helm install (Helm 3): agents Ready on every node, the plugin and conflist installed by them', async () => {
  const c = cluster();
  installWithPluginLog(image, { major: 3 });
  agentsOnEveryNode();
  for (const node of c.nodes) {
    const dir = `${c.runDir}/${node}/cni`;
    const plugin = lstatSync(`${dir}/bin/blockipam`);
    assert.ok(plugin.isFile() && (plugin.mode & 0o111) !== 0, `${node}: the agent's plugin executable`);
    const conflist = JSON.parse(readFileSync(`${dir}/net.d/10-blockipam.conflist`, 'utf8')) as {
      name: string;
      plugins: { type: string; ipam?: { nodeName?: string; kubeconfig?: string } }[];
    };
    assert.equal(conflist.name, 'blockipam');
    assert.deepEqual(
      conflist.plugins.map((p) => p.type),
      ['ptp', 'portmap'],
    );
    assert.equal(conflist.plugins[0]?.ipam?.nodeName, node);
    assert.equal(conflist.plugins[0]?.ipam?.kubeconfig, '/run/blockipam-cni/net.d/blockipam-kubeconfig');
    assert.ok(existsSync(`${dir}/net.d/blockipam-kubeconfig`));
  }
  // the kubelet polls the runtime's network status every few seconds
  await nodesReady(60_000);
  rollout('deployment', `${PREFIX}-controller`);
});

test('a Deployment’s pods run with addresses from their nodes’ blocks, ping across nodes, check is clean', async () => {
  kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(spreadDeployment(app, 6, 1)));
  const ps = await running(6);
  const byPod = ledger(ns);
  for (const p of ps) {
    const a = byPod.get(p.metadata.name);
    assert.ok(a, `${p.metadata.name} has an allocation`);
    assert.equal(a.ip, p.status.podIP);
    assert.equal(a.node, p.spec.nodeName);
    assert.equal(a.affinity, p.spec.nodeName, `${p.metadata.name}'s block ${a.block} is its node's`);
    assert.ok(inCidr(a.ip, a.block));
  }
  const nodes = [...new Set(ps.map((p) => p.spec.nodeName))];
  assert.equal(nodes.length, 3, 'spread over the three nodes');
  // plugin.logFile: every node's plugin logged its pods' ADDs there, served by the node's agent
  for (const node of nodes) {
    const served = pluginAdds(node ?? '').filter((l) => l.path === 'agent');
    const here = ps.filter((p) => p.spec.nodeName === node).length;
    assert.ok(
      served.length >= here,
      `${node}: ${served.length} ADD done lines with path "agent" in ${PLUGIN_LOG}, ${here} pods`,
    );
  }

  const [from] = ps;
  assert.ok(from);
  for (const to of ps.filter((p) => p.spec.nodeName !== from.spec.nodeName)) {
    const r = kubectl([
      '-n',
      ns,
      'exec',
      from.metadata.name,
      '--',
      'ping',
      '-c',
      '1',
      '-W',
      '5',
      to.status.podIP ?? '',
    ]);
    assert.equal(
      r.status,
      0,
      `${from.spec.nodeName} → ${to.spec.nodeName} (${to.status.podIP}): ${r.stdout}${r.stderr}`,
    );
  }
  await checkClean();
});

test('scale 0 → 30 → 0: every address unique, all released, check clean', async () => {
  scale(0);
  await running(0);
  scale(30);
  const ps = await running(30, 540_000);
  const ips = ps.map((p) => p.status.podIP);
  assert.equal(new Set(ips).size, 30, 'no address twice');
  assert.equal([...ledger(ns).keys()].length, 30);
  scale(0);
  await running(0);
  await waitFor('the 30 addresses released', () => (ledger(ns).size === 0 ? true : undefined), 120_000);
  await checkClean();
});

test('helm upgrade (Helm 4) with changed values keeps every allocation', async () => {
  scale(6);
  const ps = await running(6);
  const before = ledger(ns);
  assert.equal(before.size, 6);
  helmOk(4, [
    'upgrade',
    RELEASE,
    CHART,
    '--namespace',
    NAMESPACE,
    '--reuse-values',
    '--set',
    'cni.mtu=1400,agent.logLevel=debug,ipamConfig.minFreeAddressesPerNode=8',
  ]);
  rollout('daemonset', `${PREFIX}-agent`);
  rollout('deployment', `${PREFIX}-controller`);
  const c = cluster();
  await waitFor(
    'the new agents’ conflists (mtu 1400)',
    () =>
      c.nodes.every(
        (n) =>
          (
            JSON.parse(readFileSync(`${c.runDir}/${n}/cni/net.d/10-blockipam.conflist`, 'utf8')) as {
              plugins: { mtu?: number }[];
            }
          ).plugins[0]?.mtu === 1400,
      )
        ? true
        : undefined,
    120_000,
  );
  assert.deepEqual(ledger(ns), before, 'the same pods hold the same addresses');
  const after = await running(6);
  assert.deepEqual(after.map((p) => p.metadata.uid).sort(), ps.map((p) => p.metadata.uid).sort());
  assert.equal(
    kubectlOk(['get', 'ipamconfig', 'default', '-o', 'jsonpath={.spec.minFreeAddressesPerNode}']),
    '8',
  );
  await checkClean();
});

test('a node removed (kubelet stopped, Node deleted): the controller releases its blocks after its quarantine', async () => {
  const c = cluster();
  const gone = c.nodes[2] ?? 'node-3';
  // the deleted node's quarantine (default 600 s) shortened through the chart's value
  helmOk(4, [
    ...['upgrade', RELEASE, CHART, '--namespace', NAMESPACE, '--reuse-values'],
    ...['--set', 'controller.nodeGoneGraceSeconds=30'],
  ]);
  rollout('deployment', `${PREFIX}-controller`);
  assert.match(
    kubectlOk([
      '-n',
      NAMESPACE,
      'get',
      `deployment/${PREFIX}-controller`,
      '-o',
      'jsonpath={.spec.template.spec.containers[0].args}',
    ]),
    /--node-gone-grace-seconds=30/,
  );
  daemon('stop', `kubelet-${gone}`);
  try {
    kubectlOk(['delete', 'node', gone]);
    await waitFor(
      `no IPAMBlock affine to ${gone} and no allocation of it`,
      () => {
        const blocks = JSON.parse(kubectlOk(['get', 'ipamblocks', '-o', 'json'])) as {
          items: { spec: { affinity: string | null } }[];
        };
        const held =
          blocks.items.some((b) => b.spec.affinity === gone) || allocations().some((a) => a.node === gone);
        return held ? undefined : true;
      },
      180_000,
      2000,
    );
  } finally {
    daemon('start', `kubelet-${gone}`);
  }
  await waitFor(`${gone} Ready again`, () => (nodeReady(gone) === 'True' ? true : undefined), 180_000, 2000);
  rollout('daemonset', `${PREFIX}-agent`);
  await running(6);
});

test('helm uninstall: agents, controller, RBAC and policy go; CRDs, pools, IPAMConfig and blocks stay', async () => {
  scale(0); // before the uninstall: pods' DELs need the plugin's token, which dies with its ServiceAccount
  await running(0);
  const blocksBefore = kubectlOk(['get', 'ipamblocks', '-o', 'name']).trim().split('\n').filter(Boolean);
  helmOk(4, ['uninstall', RELEASE, '--namespace', NAMESPACE, '--wait']);
  const left = (what: string): string[] =>
    kubectlOk(['get', what, '-A', '-l', `app.kubernetes.io/instance=${RELEASE}`, '-o', 'name'])
      .trim()
      .split('\n')
      .filter(Boolean);
  await waitFor(
    'the agent and controller pods gone',
    () => (left('pods').length === 0 ? true : undefined),
    120_000,
  );
  for (const kind of [
    'daemonsets',
    'deployments',
    'serviceaccounts',
    'clusterroles',
    'clusterrolebindings',
    'validatingadmissionpolicies',
  ])
    assert.deepEqual(left(kind), [], kind);
  for (const crd of ['ippools', 'ipamblocks', 'ipamconfigs', 'ipreservations'])
    kubectlOk(['get', 'crd', `${crd}.ipam.blockipam.io`]);
  kubectlOk(['get', 'ippool', 'default-ipv4']);
  kubectlOk(['get', 'ipamconfig', 'default']);
  assert.deepEqual(
    kubectlOk(['get', 'ipamblocks', '-o', 'name']).trim().split('\n').filter(Boolean),
    blocksBefore,
  );
  assert.ok(blocksBefore.length > 0);
});

test('a fresh helm install (Helm 4) over the kept IPAM data: agents Ready on every node, a pod gets its node’s address', async () => {
  installWithPluginLog(image);
  agentsOnEveryNode();
  await nodesReady(60_000);
  rollout('deployment', `${PREFIX}-controller`);
  scale(1);
  const [pod] = await running(1);
  assert.ok(pod);
  const a = ledger(ns).get(pod.metadata.name);
  assert.ok(a, `${pod.metadata.name} has an allocation`);
  assert.equal(a.ip, pod.status.podIP);
  assert.equal(a.affinity, pod.spec.nodeName, `${pod.metadata.name}'s block ${a.block} is its node's`);
  scale(0);
  await running(0);
  helmOk(4, ['uninstall', RELEASE, '--namespace', NAMESPACE, '--wait']);
  await waitFor(
    'the agent and controller pods gone',
    () =>
      kubectlOk(['get', 'pods', '-A', '-l', `app.kubernetes.io/instance=${RELEASE}`, '-o', 'name']).trim() ===
      ''
        ? true
        : undefined,
    120_000,
  );
});
