/**
 * Install mode on the real API server: the plugin executable (the real Bun-compiled plugin,
 * scripts/build-plugin.ts), the conflist and the plugin's kubeconfig land with their modes; the
 * installed executable runs (VERSION), and an ADD and a DEL through the written conflist and
 * kubeconfig allocate and release an address as the plugin's ServiceAccount; the kubeconfig's
 * token is a TokenRequest token bound to the agent's Node, is refreshed on schedule, keeps working
 * after the agent's pod object is deleted (where a pod-bound token is refused), and dies with the
 * Node. The uninstall signal: the agent's DaemonSet deleted removes the conflist, kubeconfig and
 * masquerade table (in a network namespace of the test's), a restart keeps them, and a new
 * DaemonSet of the name (a reinstall) puts them back.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { KubeTransport } from 'blockipam/core/kube';
import { loadKubeconfig } from 'blockipam/core/kubeconfig';
import { spawnSync } from 'node:child_process';
import { controlPlane, kubectl } from '../helpers/control-plane.ts';
import { requirePrerequisite } from '../helpers/tier.ts';
import { installCrds } from '../helpers/crds.ts';
import { ensurePlugin, runPlugin, type PluginRun } from '../plugin/helpers/plugin-exe.ts';
import { AGENT_MAIN, applyNode, eventually, startAgent } from './agent-process.ts';
import type { AgentProcess } from './agent-process.ts';

const NS = 'install-ns';
const SA = 'blockipam-plugin';
const NODE = 'in-1';
const POOL = 'install-pool';
/** The agent's DaemonSet (only an object here: no controller runs it). */
const OWNER = 'install-agent';
let podUID: string;
let dir: string;
/** The real plugin executable the agent installs. */
let pluginSource: string;
let agent: AgentProcess | undefined;

function apply(object: unknown): void {
  const r = kubectl(['apply', '-f', '-'], { input: JSON.stringify(object) });
  assert.equal(r.status, 0, r.stderr);
}

/** Who the token in `kubeconfig` is (SelfSubjectReview), or the HTTP error. */
async function whoami(kubeconfig: string): Promise<{ username: string; extra: Record<string, string[]> }> {
  const api = new KubeTransport(loadKubeconfig(kubeconfig));
  try {
    const review = await api.request<{
      status: { userInfo: { username: string; extra?: Record<string, string[]> } };
    }>('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });
    return { username: review.status.userInfo.username, extra: review.status.userInfo.extra ?? {} };
  } finally {
    api.close();
  }
}

const tokenOf = (kubeconfig: string): string =>
  (JSON.parse(readFileSync(kubeconfig, 'utf8')) as { users: { user: { token: string } }[] }).users[0]?.user
    .token ?? '';

describe('agent install mode', () => {
  before(() => {
    installCrds();
    applyNode(NODE);
    apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    apply({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: SA, namespace: NS } });
    apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'agent-pod', namespace: NS },
      spec: { nodeName: NODE, serviceAccountName: SA, containers: [{ name: 'agent', image: 'busybox' }] },
    });
    podUID = kubectl(['get', 'pod', 'agent-pod', '-n', NS, '-o', 'jsonpath={.metadata.uid}']).stdout;
    assert.match(podUID, /^[0-9a-f-]{36}$/);
    // The plugin's own role, as the chart and test/cluster/install-blockipam.sh give it.
    apply({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'install-test-plugin' },
      rules: [
        {
          apiGroups: ['ipam.blockipam.io'],
          resources: ['ipamblocks'],
          verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
        },
        {
          apiGroups: ['ipam.blockipam.io'],
          resources: ['ippools', 'ipamconfigs', 'ipreservations'],
          verbs: ['get', 'list', 'watch'],
        },
        { apiGroups: [''], resources: ['pods', 'namespaces', 'nodes'], verbs: ['get', 'list', 'watch'] },
      ],
    });
    apply({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'install-test-plugin' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'install-test-plugin' },
      subjects: [{ kind: 'ServiceAccount', name: SA, namespace: NS }],
    });
    apply({
      apiVersion: 'ipam.blockipam.io/v1alpha1',
      kind: 'IPPool',
      metadata: { name: POOL },
      spec: { cidr: '10.231.0.0/24', blockSize: 28 },
    });
    dir = mkdtempSync(join(tmpdir(), 'install-'));
    pluginSource = ensurePlugin();
  });
  after(async () => {
    await agent?.kill();
    kubectl(['delete', 'namespace', NS, '--wait=false']);
    kubectl(['delete', 'pod', '--all', '-n', NS, '--grace-period=0', '--force']);
    kubectl(['delete', 'node', NODE]);
    kubectl(['delete', 'ipamblocks', '-l', `blockipam.io/node=${NODE}`, '--wait=false']);
    kubectl(['delete', 'ippool', POOL, '--ignore-not-found']);
    kubectl(['delete', 'clusterrolebinding,clusterrole', 'install-test-plugin', '--ignore-not-found']);
    rmSync(dir, { recursive: true, force: true });
  });

  const installArgs = (): string[] => [
    '--cni-bin-dir',
    join(dir, 'bin'),
    '--cni-conf-dir',
    join(dir, 'net.d'),
    '--plugin-binary',
    pluginSource,
    '--plugin-kubeconfig',
    join(dir, 'net.d', 'blockipam-kubeconfig'),
    '--service-account',
    SA,
    '--namespace',
    NS,
    '--mtu',
    '1400',
    '--token-expiration-seconds',
    '600',
    // no agent serves here: the conflist names no IPAM socket (the plugin's direct path)
    '--ipam-socket=',
  ];

  test('install (once): files, contents and modes', () => {
    const r = spawnSync(
      process.execPath,
      [
        AGENT_MAIN,
        'install',
        '--node-name',
        NODE,
        '--kubeconfig',
        controlPlane().adminKubeconfig,
        '--no-portmap',
        ...installArgs(),
      ],
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 0, r.stderr);
    const bin = join(dir, 'bin', 'blockipam');
    assert.equal(sha256(bin), sha256(pluginSource), 'the real plugin, byte for byte');
    assert.equal(statSync(bin).mode & 0o777, 0o755);
    const conflist = join(dir, 'net.d', '10-blockipam.conflist');
    assert.equal(statSync(conflist).mode & 0o777, 0o644);
    const doc = JSON.parse(readFileSync(conflist, 'utf8')) as {
      cniVersion: string;
      plugins: Record<string, unknown>[];
    };
    assert.equal(doc.cniVersion, '1.1.0');
    assert.deepEqual(
      doc.plugins.map((p) => p.type),
      ['ptp'],
      '--no-portmap drops portmap',
    );
    assert.deepEqual(doc.plugins[0], {
      type: 'ptp',
      ipMasq: false,
      mtu: 1400,
      capabilities: { 'io.kubernetes.cri.pod-annotations': true },
      ipam: { type: 'blockipam', kubeconfig: join(dir, 'net.d', 'blockipam-kubeconfig'), nodeName: NODE },
    });
    assert.equal(statSync(join(dir, 'net.d', 'blockipam-kubeconfig')).mode & 0o777, 0o600);
  });

  test('the installed plugin runs: VERSION, then ADD and DEL through the written conflist and kubeconfig', async () => {
    const bin = join(dir, 'bin', 'blockipam');
    const version = await runInstalled(bin, { CNI_COMMAND: 'VERSION' }, '{"cniVersion":"1.1.0"}');
    assert.equal(version.status, 0, version.stderr);
    assert.ok(
      (JSON.parse(version.stdout) as { supportedVersions: string[] }).supportedVersions.includes('1.1.0'),
      version.stdout,
    );
    // The runtime's view of the conflist: each plugin gets name + cniVersion + its own entry;
    // ptp hands that same document to its IPAM plugin, which is what runs here. Only the host
    // path the plugin would write (cacheDir, its lock file) points into the test's directory.
    const doc = JSON.parse(readFileSync(join(dir, 'net.d', '10-blockipam.conflist'), 'utf8')) as {
      cniVersion: string;
      name: string;
      plugins: { ipam: Record<string, unknown> }[];
    };
    const ptp = doc.plugins[0] as { ipam: Record<string, unknown> };
    const conf = JSON.stringify({
      cniVersion: doc.cniVersion,
      name: doc.name,
      ...ptp,
      ipam: {
        ...ptp.ipam,
        ipv4Pools: [POOL],
        cacheDir: join(dir, 'cache'),
      },
    });
    const rt = { CNI_CONTAINERID: 'install-c1', CNI_NETNS: '/proc/self/ns/net', CNI_IFNAME: 'eth0' };
    const add = await runInstalled(bin, { ...rt, CNI_COMMAND: 'ADD' }, conf);
    assert.equal(add.status, 0, add.stdout + add.stderr);
    const address = (JSON.parse(add.stdout) as { ips: { address: string }[] }).ips[0]?.address ?? '';
    assert.match(address, /^10\.231\.0\.\d+\/28$/);
    const held = (): string[] =>
      (
        JSON.parse(
          kubectl(['get', 'ipamblocks', '-l', `ipam.blockipam.io/pool=${POOL}`, '-o', 'json']).stdout,
        ) as {
          items: { spec: { allocations: Record<string, { handle: string }> } }[];
        }
      ).items.flatMap((b) => Object.values(b.spec.allocations).map((a) => a.handle));
    assert.deepEqual(held(), [`${doc.name}.install-c1.eth0`]);
    const del = await runInstalled(bin, { ...rt, CNI_COMMAND: 'DEL' }, conf);
    assert.equal(del.status, 0, del.stdout + del.stderr);
    assert.deepEqual(held(), []);
  });

  test('the token is bound to the agent’s Node, refreshed on schedule, outlives the agent’s pod, dies with the Node', async () => {
    agent = startInstallingAgent();
    const kubeconfig = join(dir, 'net.d', 'blockipam-kubeconfig');
    await agent.waitFor((l) => l.message === 'conflist written', 'conflist written');
    const first = tokenOf(kubeconfig);
    const who = await whoami(kubeconfig);
    assert.equal(who.username, `system:serviceaccount:${NS}:${SA}`);
    assert.deepEqual(who.extra['authentication.kubernetes.io/node-name'], [NODE]);
    assert.deepEqual(who.extra['authentication.kubernetes.io/node-uid'], [nodeUID()]);
    assert.equal(who.extra['authentication.kubernetes.io/pod-name'], undefined, 'not bound to a pod');
    const second = await eventually('a refreshed token', () => {
      const t = tokenOf(kubeconfig);
      return t !== first ? t : undefined;
    });
    assert.notEqual(second, first);
    assert.equal(statSync(kubeconfig).mode & 0o777, 0o600);
    assert.equal((await whoami(kubeconfig)).username, `system:serviceaccount:${NS}:${SA}`);
    await agent.kill();
    agent = undefined;
    // the control: a token bound to the agent's pod, as the plugin's was before (issue 24)
    const podBound = join(dir, 'pod-bound-kubeconfig');
    const minted = kubectl([
      ...['create', 'token', SA, '-n', NS, '--bound-object-kind', 'Pod'],
      ...['--bound-object-name', 'agent-pod', '--bound-object-uid', podUID],
    ]);
    assert.equal(minted.status, 0, minted.stderr);
    writeFileSync(
      podBound,
      readFileSync(kubeconfig, 'utf8').replace(tokenOf(kubeconfig), minted.stdout.trim()),
      { mode: 0o600 },
    );
    await whoami(podBound);
    const plugin = tokenOf(kubeconfig);
    kubectl(['delete', 'pod', 'agent-pod', '-n', NS, '--grace-period=0', '--force']);
    await eventually('the pod-bound token refused after the pod is deleted', () => refusal(podBound));
    assert.equal(tokenOf(kubeconfig), plugin, 'no agent rewrote it');
    assert.deepEqual(
      (await whoami(kubeconfig)).extra['authentication.kubernetes.io/node-name'],
      [NODE],
      'the Node-bound token still works',
    );
    kubectl(['delete', 'node', NODE]);
    await eventually('the Node-bound token refused after the Node is deleted', () => refusal(kubeconfig));
  });

  test('a Node deleted and registered again: the agent mints a new token at once, not at the next refresh', async () => {
    applyNode(NODE);
    agent = startAgent(NODE, ['--install-cni', ...installArgs()]);
    const kubeconfig = join(dir, 'net.d', 'blockipam-kubeconfig');
    await agent.waitFor((l) => l.message === 'conflist written', 'conflist written');
    const before = nodeUID();
    assert.deepEqual((await whoami(kubeconfig)).extra['authentication.kubernetes.io/node-uid'], [before]);
    kubectl(['delete', 'node', NODE]);
    applyNode(NODE);
    // the token expires in 600 s (refresh at 300 s): a working token within 30 s is the rebind
    // (the old token may still pass for a few seconds: the API server caches token reviews)
    const after = nodeUID();
    assert.notEqual(after, before);
    await eventually('a token bound to the new Node', async () => {
      try {
        const who = await whoami(kubeconfig);
        return who.extra['authentication.kubernetes.io/node-uid']?.[0] === after ? true : undefined;
      } catch {
        return undefined;
      }
    });
    await agent.kill();
    agent = undefined;
  });

  test('uninstall signal: a restart keeps the conflist; the agent’s DaemonSet deleted removes it and the kubeconfig', async () => {
    applyNode(NODE);
    const conflist = join(dir, 'net.d', '10-blockipam.conflist');
    const kubeconfig = join(dir, 'net.d', 'blockipam-kubeconfig');
    const owned = (): AgentProcess =>
      startAgent(NODE, ['--install-cni', ...installArgs(), '--owner-daemonset', OWNER]);
    apply(daemonSet(OWNER));
    // a restart (SIGTERM, the DaemonSet in place): the shutdown checks the DaemonSet and keeps both files
    agent = owned();
    await agent.waitFor((l) => l.message === 'conflist written', 'conflist written');
    agent.child.kill('SIGTERM');
    assert.equal(await agent.exited(), 0);
    assert.ok(existsSync(conflist), 'a restart keeps the conflist');
    assert.ok(existsSync(kubeconfig), 'a restart keeps the kubeconfig');
    assert.equal(agent.lines.filter((l) => l.message === 'conflist and plugin kubeconfig removed').length, 0);
    // a DaemonSet of another name going does not count
    apply(daemonSet(`${OWNER}-other`));
    agent = owned();
    await agent.waitFor((l) => l.message === 'conflist written', 'conflist written');
    assert.equal(kubectl(['delete', 'daemonset', `${OWNER}-other`, '-n', NS]).status, 0);
    // the uninstall: the agent's own DaemonSet deleted while the agent runs
    assert.equal(kubectl(['delete', 'daemonset', OWNER, '-n', NS]).status, 0);
    const removed = await agent.waitFor(
      (l) => l.message === 'conflist and plugin kubeconfig removed',
      'conflist and plugin kubeconfig removed',
    );
    assert.equal(removed.path, conflist);
    assert.ok(!existsSync(conflist), 'the conflist is gone');
    assert.ok(!existsSync(kubeconfig), 'the kubeconfig is gone');
    assert.ok(existsSync(join(dir, 'bin', 'blockipam')), 'the plugin executable stays');
    // it writes nothing afterwards (no token refresh), and its own shutdown is clean
    agent.child.kill('SIGTERM');
    assert.equal(await agent.exited(), 0);
    assert.ok(!existsSync(conflist) && !existsSync(kubeconfig));
    // an agent whose DaemonSet was never there (a wrong name): a restart removes nothing
    agent = owned();
    await agent.waitFor(
      (l) => l.message === 'own DaemonSet not found: the conflist stays when the agent is removed',
      'not found warning',
    );
    await agent.waitFor((l) => l.message === 'conflist written', 'conflist written');
    agent.child.kill('SIGTERM');
    assert.equal(await agent.exited(), 0);
    assert.ok(existsSync(conflist), 'never seen: the conflist stays');
    agent = undefined;
  });

  test('the DaemonSet deleted and created again while the agent runs: conflist and masquerade table removed, then installed again', async () => {
    requirePrerequisite(
      '/usr/sbin/nft',
      'nftables',
      'scripts/setup.sh installs it (apt-get install nftables)',
    );
    applyNode(NODE);
    const conflist = join(dir, 'net.d', '10-blockipam.conflist');
    const kubeconfig = join(dir, 'net.d', 'blockipam-kubeconfig');
    // the agent's masquerade table goes into a network namespace of this test's, never the host's
    const netns = `install-mq-${process.pid}`;
    assert.equal(spawnSync('ip', ['netns', 'add', netns]).status, 0);
    const tableThere = (): boolean =>
      spawnSync('ip', ['netns', 'exec', netns, 'nft', 'list', 'table', 'inet', 'blockipam']).status === 0;
    const nft = ['ip', 'netns', 'exec', netns, 'nft'].flatMap((word) => ['--nft-command', word]);
    const owned = (): AgentProcess =>
      startAgent(NODE, [
        ...['--install-cni', ...installArgs(), '--owner-daemonset', OWNER],
        ...['--masquerade', ...nft],
      ]);
    try {
      await reinstalled(owned, conflist, kubeconfig, tableThere);
    } finally {
      await agent?.kill();
      agent = undefined;
      spawnSync('ip', ['netns', 'delete', netns]);
    }
  });

  async function reinstalled(
    owned: () => AgentProcess,
    conflist: string,
    kubeconfig: string,
    tableThere: () => boolean,
  ): Promise<void> {
    apply(daemonSet(OWNER));
    // a plain restart keeps the table (pods keep their egress)
    agent = owned();
    await eventually('the masquerade table written', () => (tableThere() ? true : undefined));
    agent.child.kill('SIGTERM');
    assert.equal(await agent.exited(), 0);
    assert.ok(tableThere(), 'a restart keeps the masquerade table');
    const a = owned();
    agent = a;
    /** The next log line `message` after the ones logged so far. */
    const next = (message: string): Promise<unknown> => {
      const mark = a.lines.length;
      return a.waitFor((l) => l.message === message && a.lines.indexOf(l) >= mark, message);
    };
    await a.waitFor((l) => l.message === 'conflist written', 'conflist written');
    // helm uninstall (the agent's pod not yet gone), then helm install: a new DaemonSet, another uid
    let removed = next('conflist and plugin kubeconfig removed');
    assert.equal(kubectl(['delete', 'daemonset', OWNER, '-n', NS]).status, 0);
    await removed;
    assert.ok(!existsSync(conflist) && !existsSync(kubeconfig), 'uninstalled');
    await eventually('the masquerade table removed', () => (tableThere() ? undefined : true));
    const written = next('conflist written');
    apply(daemonSet(OWNER));
    await written;
    assert.ok(existsSync(conflist), 'the conflist is back');
    await eventually('the masquerade table back', () => (tableThere() ? true : undefined));
    assert.deepEqual(
      (await whoami(kubeconfig)).extra['authentication.kubernetes.io/node-name'],
      [NODE],
      'with a working token',
    );
    // the next deletion is news again
    removed = next('conflist and plugin kubeconfig removed');
    assert.equal(kubectl(['delete', 'daemonset', OWNER, '-n', NS]).status, 0);
    await removed;
    assert.ok(!existsSync(conflist) && !existsSync(kubeconfig), 'uninstalled again');
    await eventually('the masquerade table removed again', () => (tableThere() ? undefined : true));
    a.child.kill('SIGTERM');
    assert.equal(await a.exited(), 0);
    assert.ok(!tableThere(), 'not written back at shutdown');
    agent = undefined;
  }

  /** true once the token in `kubeconfig` is refused (401), else undefined. */
  async function refusal(kubeconfig: string): Promise<true | undefined> {
    try {
      await whoami(kubeconfig);
      return undefined;
    } catch (error) {
      return /401|Unauthorized/i.test(String(error)) ? true : undefined;
    }
  }

  function daemonSet(name: string): unknown {
    const labels = { app: name };
    return {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name, namespace: NS },
      spec: {
        selector: { matchLabels: labels },
        template: { metadata: { labels }, spec: { containers: [{ name: 'agent', image: 'busybox' }] } },
      },
    };
  }

  const nodeUID = (): string => kubectl(['get', 'node', NODE, '-o', 'jsonpath={.metadata.uid}']).stdout;

  function sha256(path: string): string {
    return createHash('sha256').update(readFileSync(path)).digest('hex');
  }

  /** Runs the installed executable as a runtime does: CNI_* env (PATH and CNI_PATH besides), conf on stdin. */
  const runInstalled = (bin: string, env: Record<string, string>, stdin: string): Promise<PluginRun> =>
    runPlugin({ CNI_PATH: join(dir, 'bin'), ...env }, stdin, bin);

  function startInstallingAgent(): AgentProcess {
    return startAgent(NODE, ['--install-cni', '--token-refresh-seconds', '2', ...installArgs()]);
  }
});
