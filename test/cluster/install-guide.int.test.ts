/**
 * docs/install.md's guide followed on the test cluster as if it were the reader's, start to end
 * (install-guide.ts: how the blocks run and what stands in for the reader's registry), with the
 * checks of what each block promises in between:
 * the image and the chart pushed (the registry serves the archive's digest and the chart);
 * `helm install` from the registry → the agents run `$REGISTRY/blockipam:$VERSION`, nodes Ready,
 * `ipamctl check` clean, pods addressed from their nodes' blocks; a rollout restart of the agents
 * never removes a conflist (watched with inotify on every node's CNI folder); `helm uninstall`
 * with a fallback conflist (ptp + host-local) on every node → every conflist of blockipam and
 * every masquerade table gone,
 * every node Ready, the running pods keep their addresses and new pods get the fallback's;
 * installed again → every allocation as it was, check clean.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, watch, writeFileSync } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { cluster, inNode, kubectl, kubectlOk } from '../helpers/cluster.ts';
import { REPO } from '../charts/helm.ts';
import { inCidr, ledger, nodeReady, podsRunning, spreadDeployment, waitFor } from './blockipam.ts';
import type { PodObject } from './blockipam.ts';
import { cleanNodes, NODE_CNI, setUpChart } from './chart.ts';
import type { ChartImage } from './chart.ts';
import { craneBinary, guideBlocks, guideTools, runStep, startRegistry, tagInNodes } from './install-guide.ts';
import type { GuideEnv, Registry } from './install-guide.ts';

const ns = 'guide';
const app = 'guide-spread';
const CONFLIST = '10-blockipam.conflist';
const FALLBACK = '90-fallback.conflist';
/** The fallback network's range: node i gets 10.245.i.0/24 (apart from blockipam's 10.244/16). */
const FALLBACK_RANGE = '10.245.0.0/16';
let image: ChartImage;
let registry: Registry | undefined;
let work: string;
let tools: string;
let env: GuideEnv;

before(async () => {
  const c = cluster();
  // The harness's own install (install-blockipam.sh, other files of a shared run) made these
  // without Helm's labels; the chart's release "blockipam" would collide with them.
  for (const object of [
    'clusterrolebinding/blockipam-plugin',
    'clusterrole/blockipam-plugin',
    'serviceaccount/blockipam-plugin',
  ]) {
    const r = kubectl(['-n', 'kube-system', 'get', object, '--ignore-not-found', '-o', 'json']);
    const found =
      r.stdout.trim() === ''
        ? undefined
        : (JSON.parse(r.stdout) as { metadata: { labels?: Record<string, string> } });
    if (found && found.metadata.labels?.['app.kubernetes.io/managed-by'] !== 'Helm')
      kubectlOk(['-n', 'kube-system', 'delete', object]);
  }
  image = setUpChart(ns);
  // host-local for the fallback conflist, as a node's OS package provides it
  for (const node of c.nodes) {
    const dir = `${c.runDir}/${node}/cni`;
    const r = inNode(node, 'sh', [
      '-c',
      `[ -e ${NODE_CNI}/bin/host-local ] || ln -s "${c.cniBin}/host-local" ${NODE_CNI}/bin/host-local`,
    ]);
    assert.equal(r.status, 0, r.stderr);
    writeFileSync(
      `${dir}/net.d/${FALLBACK}`,
      JSON.stringify(fallbackConflist(c.nodes.indexOf(node) + 1), null, 2),
    );
  }
  work = mkdtempSync(join(tmpdir(), 'install-guide-'));
  const crane = craneBinary();
  tools = guideTools(join(work, 'bin'), crane);
  registry = await startRegistry(crane);
  const { version } = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string };
  const values = join(work, 'values.yaml');
  // the reader's values: the harness's API server address and per-node CNI folders (chart.ts)
  writeFileSync(
    values,
    [
      'apiServer: { host: 10.99.0.1, port: 6443 }',
      `cni: { binDir: ${NODE_CNI}/bin, confDir: ${NODE_CNI}/net.d }`,
      'pools:',
      '  - { name: default-ipv4, cidr: 10.244.0.0/16, blockSize: 26 }',
      '',
    ].join('\n'),
  );
  env = { REGISTRY: `${registry.host}/network`, VERSION: version, VALUES: values, KUBECONFIG: c.kubeconfig };
});

after(async () => {
  const c = cluster();
  kubectl(['delete', 'namespace', ns, '--wait=true', '--timeout=120s']);
  runStepQuiet('uninstall');
  kubectl(['delete', 'ipamblocks,ippools.ipam.blockipam.io,ipamconfigs', '--all']);
  for (const node of c.nodes) {
    const dir = `${c.runDir}/${node}/cni`;
    rmSync(`${dir}/net.d/${FALLBACK}`, { force: true });
    inNode(node, 'sh', ['-c', `rm -rf ${NODE_CNI}/host-local; rm -f ${NODE_CNI}/bin/host-local`]);
  }
  cleanNodes();
  await registry?.stop();
  rmSync(work, { recursive: true, force: true });
});

/** A ptp + host-local conflist (cniVersion 1.0.0: no STATUS), node `i`'s /24, state under the node's CNI folder. */
function fallbackConflist(i: number): Record<string, unknown> {
  return {
    cniVersion: '1.0.0',
    name: 'fallback',
    plugins: [
      {
        type: 'ptp',
        ipMasq: false,
        ipam: {
          type: 'host-local',
          ranges: [[{ subnet: `10.245.${i}.0/24` }]],
          dataDir: `${NODE_CNI}/host-local`,
        },
      },
    ],
  };
}

function step(name: string): string {
  const r = runStep(name, env, tools);
  assert.equal(
    r.status,
    0,
    `docs/install.md block "${name}" failed (exit ${r.status}):\n${r.stdout}\n${r.stderr}`,
  );
  return r.stdout;
}

function runCrane(
  crane: string,
  args: readonly string[],
): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(crane, args, { encoding: 'utf8' });
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

function runStepQuiet(name: string): void {
  if (env) runStep(name, env, tools);
}

const conflistOn = (node: string, name = CONFLIST): string => `${cluster().runDir}/${node}/cni/net.d/${name}`;

/** The pods of the spread Deployment: name → [uid, address]. */
function podAddresses(ps: readonly PodObject[]): Map<string, [string, string]> {
  return new Map(ps.map((p) => [p.metadata.name, [p.metadata.uid, p.status.podIP ?? '']]));
}

test('the guide’s blocks, in order, are the steps this test follows', () => {
  assert.deepEqual(
    guideBlocks().map((b) => b.name),
    ['image', 'chart', 'install', 'check', 'uninstall'],
  );
});

test('image and chart: built, packaged and pushed; the registry serves the archive’s digest and the chart', () => {
  step('image');
  step('chart');
  const crane = join(tools, 'crane');
  const digest = (ref: string): string => {
    const r = runCrane(crane, ['digest', ref]);
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.trim();
  };
  // the archive's image manifest, as its index names it
  const index = JSON.parse(
    execFileSync('tar', ['-xOf', image.archive, './index.json'], { encoding: 'utf8' }),
  ) as {
    manifests: { digest: string }[];
  };
  const built = index.manifests[0]?.digest;
  assert.equal(
    digest(`${env.REGISTRY}/blockipam:${env.VERSION}`),
    built,
    'the pushed image is the built one',
  );
  const tags = runCrane(crane, ['ls', `${env.REGISTRY}/charts/blockipam`]);
  assert.equal(tags.status, 0, tags.stderr);
  assert.deepEqual(tags.stdout.trim().split('\n'), [env.VERSION]);
  // the registry substitute (install-guide.ts): what each node's pull would have left
  tagInNodes(image.ref, `${env.REGISTRY}/blockipam:${env.VERSION}`);
});

test('install from the registry: agents run the pushed image, nodes Ready, check clean, pods get their nodes’ blocks', async () => {
  step('install');
  const images = kubectlOk([
    ...['-n', 'kube-system', 'get', 'daemonset/blockipam-agent', 'deployment/blockipam-controller'],
    ...['-o', 'jsonpath={range .items[*]}{.spec.template.spec.containers[0].image}{"\\n"}{end}'],
  ]);
  assert.deepEqual(images.trim().split('\n'), [
    `${env.REGISTRY}/blockipam:${env.VERSION}`,
    `${env.REGISTRY}/blockipam:${env.VERSION}`,
  ]);
  for (const node of cluster().nodes)
    assert.ok(existsSync(conflistOn(node)), `${node}: the agent's conflist`);
  step('check');
  kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(spreadDeployment(app, 6, 1)));
  const ps = await podsRunning(ns, app, 6);
  const byPod = ledger(ns);
  for (const p of ps) {
    const a = byPod.get(p.metadata.name);
    assert.ok(a, `${p.metadata.name} has an allocation`);
    assert.equal(a.ip, p.status.podIP);
    assert.equal(a.affinity, p.spec.nodeName, `${p.metadata.name}'s block ${a.block} is its node's`);
  }
});

test('a rollout restart of every agent never removes a conflist', async () => {
  const c = cluster();
  const removed: string[] = [];
  const watchers: FSWatcher[] = c.nodes.map((node) =>
    watch(`${c.runDir}/${node}/cni/net.d`, (_event, file) => {
      if (file === CONFLIST && !existsSync(conflistOn(node))) removed.push(node);
    }),
  );
  const before = ledger(ns);
  const agents = (): string[] =>
    kubectlOk(['-n', 'kube-system', 'get', 'pods', '-l', 'app.kubernetes.io/component=agent', '-o', 'name'])
      .trim()
      .split('\n')
      .sort();
  const old = agents();
  try {
    kubectlOk(['-n', 'kube-system', 'rollout', 'restart', 'daemonset/blockipam-agent']);
    kubectlOk(['-n', 'kube-system', 'rollout', 'status', 'daemonset/blockipam-agent', '--timeout=300s']);
    await waitFor(
      'only new agent pods',
      () => {
        const now = agents();
        return now.length === c.nodes.length && now.every((p) => !old.includes(p)) ? true : undefined;
      },
      120_000,
    );
  } finally {
    for (const w of watchers) w.close();
  }
  assert.deepEqual(removed, [], 'no agent removed its conflist while restarting');
  for (const node of c.nodes) assert.ok(existsSync(conflistOn(node)), node);
  assert.deepEqual(ledger(ns), before, 'the same pods hold the same addresses');
});

/** True when the agent's nftables table is in `node`'s network namespace. */
const masqueradeTable = (node: string): boolean =>
  inNode(node, 'nft', ['list', 'table', 'inet', 'blockipam']).status === 0;

let kept: Map<string, [string, string]>;
let keptLedger: ReturnType<typeof ledger>;

test('helm uninstall with a fallback conflist on every node: conflists gone, every node Ready, pods keep their addresses, new pods get the fallback’s', async () => {
  const c = cluster();
  kept = podAddresses(await podsRunning(ns, app, 6));
  keptLedger = ledger(ns);
  step('uninstall');
  await waitFor(
    'every node’s blockipam conflist removed',
    () => (c.nodes.every((n) => !existsSync(conflistOn(n))) ? true : undefined),
    120_000,
  );
  await waitFor(
    'every node’s masquerade table removed with the conflist',
    () => (c.nodes.every((n) => !masqueradeTable(n)) ? true : undefined),
    60_000,
  );
  for (const node of c.nodes) {
    assert.ok(
      !existsSync(`${c.runDir}/${node}/cni/net.d/blockipam-kubeconfig`),
      `${node}: kubeconfig removed`,
    );
    assert.ok(existsSync(conflistOn(node, FALLBACK)), `${node}: the fallback stays`);
  }
  // new pods on every node start on the fallback network: the runtime took it
  const fallback = 'guide-fallback';
  kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(spreadDeployment(fallback, 3, 1)));
  const fps = await podsRunning(ns, fallback, 3);
  assert.deepEqual([...new Set(fps.map((p) => p.spec.nodeName))].sort(), [...c.nodes].sort());
  for (const p of fps)
    assert.ok(inCidr(p.status.podIP ?? '', FALLBACK_RANGE), `${p.metadata.name}: ${p.status.podIP}`);
  for (const node of c.nodes) assert.equal(nodeReady(node), 'True', `${node} Ready`);
  assert.deepEqual(
    podAddresses(await podsRunning(ns, app, 6)),
    kept,
    'the running pods keep their addresses',
  );
  assert.deepEqual(ledger(ns), keptLedger, 'their allocations stay');
  kubectlOk(['-n', ns, 'delete', 'deployment', fallback]);
  await podsRunning(ns, fallback, 0);
});

test('installed again: every allocation is the one it was, check clean', async () => {
  step('install');
  step('check');
  await waitFor(
    'every node’s masquerade table back',
    () => (cluster().nodes.every((n) => masqueradeTable(n)) ? true : undefined),
    60_000,
  );
  assert.deepEqual(podAddresses(await podsRunning(ns, app, 6)), kept);
  assert.deepEqual(ledger(ns), keptLedger);
});
