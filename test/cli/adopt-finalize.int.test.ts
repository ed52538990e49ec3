// ipamctl adopt finalize against the real API server: Nodes with podCIDRs, Pods whose addresses are
// set through the status subresource as host-local's would be, IPAMBlocks as the agent's import
// writes them; the real executable's exit code and output as a migration goes on — no podCIDR pool
// (1, nothing adopted), a node not opted in (1, the label to set), an opted-in node whose pod IP no
// block allocates yet (1, wait for the import), everything recorded (0, the helm command, what
// changes after) — host-network and Succeeded pods not counted, -o json, and an unreachable API
// server (2).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';
import type { KubeDatastore } from 'blockipam/core/kube';
import type { IPPool, Pod } from 'blockipam/core';
import { controlPlane } from '../helpers/control-plane.ts';
import {
  blockObject,
  cleanClusterHooks,
  ipamctl,
  poolObject,
  TEST_LABEL,
  uniqueNamespace,
} from './cluster.ts';

const main = fileURLToPath(new URL('../../cli/main.ts', import.meta.url));
const ns = uniqueNamespace('ipamctl-finalize');
const dir = mkdtempSync(join(tmpdir(), 'ipamctl-finalize-'));
let ds: KubeDatastore;

after(() => rmSync(dir, { recursive: true, force: true }));

/** Creates a Node with one podCIDR, labelled for cleanup, opted in to adoption or not. */
async function createPodCIDRNode(name: string, podCIDR: string, adopted: boolean): Promise<void> {
  await ds.transport.request('POST', '/api/v1/nodes', {
    body: {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name, labels: { [TEST_LABEL]: '1', ...(adopted ? { 'blockipam.io/adopt': 'true' } : {}) } },
      spec: { podCIDR, podCIDRs: [podCIDR] },
    },
  });
}

/** `kubectl label node NAME blockipam.io/adopt=true`. */
async function optIn(name: string): Promise<void> {
  await ds.transport.request('PATCH', `/api/v1/nodes/${name}`, {
    body: { metadata: { labels: { 'blockipam.io/adopt': 'true' } } },
    contentType: 'application/merge-patch+json',
  });
}

/** Creates a Pod on `node` and sets its status (phase, podIPs) through the status subresource. */
async function createPodWithIP(options: {
  name: string;
  node: string;
  ip: string;
  phase?: string;
  hostNetwork?: boolean;
}): Promise<void> {
  const pod = await ds.transport.request<Pod>('POST', `/api/v1/namespaces/${ns}/pods`, {
    body: {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: options.name },
      spec: {
        nodeName: options.node,
        ...(options.hostNetwork ? { hostNetwork: true } : {}),
        containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }],
      },
    },
  });
  const status = { phase: options.phase ?? 'Running', podIP: options.ip, podIPs: [{ ip: options.ip }] };
  await ds.transport.request('PUT', `/api/v1/namespaces/${ns}/pods/${options.name}/status`, {
    body: { ...pod, status },
  });
}

/** The node's /24 podCIDR block, holding `ordinal` for `pod` as the agent's import records it. */
async function importBlock(node: string, cidr: string, ordinal: number, pod: string): Promise<void> {
  const allocations = [
    { ordinal, handle: `kind.c-${pod}.eth0`, node, namespace: ns, pod, podUID: `uid-${pod}` },
  ];
  await ds.blocks.create(blockObject({ cidr, pool: 'kind', affinity: node, allocations }));
}

/** The real executable, as an operator runs it. */
function executable(args: string[], kubeconfig = controlPlane().adminKubeconfig) {
  return spawnSync(process.execPath, [main, ...args, '--kubeconfig', kubeconfig], { encoding: 'utf8' });
}

const kindPool = (): IPPool => {
  const pool = poolObject('kind', '10.244.0.0/16', 24);
  return { ...pool, spec: { ...pool.spec, podCIDRBlocks: true } };
};

/**
 * Two kind-shaped nodes: adopt-1 opted in, its pod's address imported; adopt-2 not opted in, its
 * pod's address still host-local's. Neither a host-network pod nor a finished pod counts.
 */
async function halfway(): Promise<void> {
  await ds.pools.create(kindPool());
  await createPodCIDRNode('adopt-1', '10.244.1.0/24', true);
  await createPodCIDRNode('adopt-2', '10.244.2.0/24', false);
  await createPodWithIP({ name: 'a', node: 'adopt-1', ip: '10.244.1.2' });
  await createPodWithIP({ name: 'b', node: 'adopt-2', ip: '10.244.2.2' });
  await createPodWithIP({ name: 'host', node: 'adopt-1', ip: '10.244.1.200', hostNetwork: true });
  await createPodWithIP({ name: 'done', node: 'adopt-1', ip: '10.244.1.201', phase: 'Succeeded' });
  await importBlock('adopt-1', '10.244.1.0/24', 2, 'a');
}

interface FinalizeJson {
  ready: boolean;
  counts: Record<string, number>;
  podCIDRPools: string[];
  notAdopted: { node: string; fix: string }[];
  unrecorded: { node: string; state: string; addresses: { address: string; pod: string }[] }[];
  next?: string;
}

describe('ipamctl adopt finalize (real API server)', () => {
  cleanClusterHooks({ namespace: ns, nodes: [], onReady: (d) => (ds = d) });

  test('no podCIDR pool: exit 1, nothing adopted', async () => {
    await ds.pools.create(poolObject('plain', '10.96.0.0/16', 26));
    const out = executable(['adopt', 'finalize']);
    assert.equal(out.status, 1, out.stdout + out.stderr);
    assert.match(
      out.stdout,
      /^not ready: no podCIDR pool \(IPPool spec\.podCIDRBlocks\): nothing is adopted/,
    );
    assert.match(out.stdout, /Nothing was changed/);
  });

  test('a migration: a node not opted in, then its pod IP not imported yet, then ready', async () => {
    await halfway();
    let out = executable(['adopt', 'finalize']);
    assert.equal(out.status, 1, out.stdout + out.stderr);
    assert.match(
      out.stdout,
      /NODES NOT ADOPTED \(1\):\n {2}adopt-2: podCIDR 10\.244\.2\.0\/24 in podCIDR pool kind, .*\n {4}next: kubectl label node adopt-2 blockipam\.io\/adopt=true\n/,
    );
    assert.match(
      out.stdout,
      new RegExp(
        `POD IPS NOT RECORDED \\(1 on 1 node\\(s\\)\\):\\n {2}adopt-2 \\(not adopted\\): 1 pod IP\\(s\\) no IPAMBlock allocates: 10\\.244\\.2\\.2 \\(${ns}/b\\)\\n`,
      ),
    );
    assert.match(out.stdout, /not ready: 1 node\(s\) not adopted, 1 pod IP\(s\) not recorded: /);
    assert.doesNotMatch(out.stdout, /helm upgrade/);

    await optIn('adopt-2');
    out = executable(['adopt', 'finalize']);
    assert.equal(out.status, 1, out.stdout + out.stderr);
    assert.doesNotMatch(out.stdout, /NODES NOT ADOPTED/);
    assert.match(
      out.stdout,
      /adopt-2 \(adopted\): 1 pod IP\(s\) no IPAMBlock allocates: 10\.244\.2\.2 .*\n {4}next: wait for the agent's import on node adopt-2: blockipam_agent_host_local_files\{node="adopt-2",state="pending"\}/,
    );

    await importBlock('adopt-2', '10.244.2.0/24', 2, 'b');
    out = executable(['adopt', 'finalize']);
    assert.equal(out.status, 0, out.stdout + out.stderr);
    assert.equal(
      out.stdout,
      [
        '2 node(s) with a podCIDR in podCIDR pool kind, 2 live pod IP(s) in it.',
        '',
        "ready: every node adopted, every pod address recorded; switch adoption mode off: helm upgrade RELEASE CHART --reuse-values --set adopt.hostLocalStore=''",
        '',
        "After it every agent writes its conflist on every node (new nodes too) and reads no host-local store: no rollback to host-local any more. kindnetd's DaemonSet may be deleted (kubectl -n kube-system delete daemonset kindnet); host-local's store files stay on disk and may be removed.",
        '',
        'Nothing was changed: adoption mode is the chart setting adopt.hostLocalStore, switched by helm only.',
        '',
      ].join('\n'),
    );
  });

  test('-o json: the blockers, and the command once ready', async () => {
    await halfway();
    let run = await ipamctl(['adopt', 'finalize', '-o', 'json', '-q']);
    assert.equal(run.code, 1, run.stderr);
    let data = JSON.parse(run.stdout) as FinalizeJson;
    assert.equal(data.ready, false);
    assert.deepEqual(data.counts, { podCIDRPools: 1, nodes: 2, addresses: 2, notAdopted: 1, unrecorded: 1 });
    assert.deepEqual(
      data.notAdopted.map((n) => n.fix),
      ['kubectl label node adopt-2 blockipam.io/adopt=true'],
    );
    assert.deepEqual(
      data.unrecorded.map((u) => [u.node, u.state, u.addresses]),
      [['adopt-2', 'not-adopted', [{ address: '10.244.2.2', namespace: ns, pod: 'b' }]]],
    );
    assert.equal(data.next, undefined);

    await optIn('adopt-2');
    await importBlock('adopt-2', '10.244.2.0/24', 2, 'b');
    run = await ipamctl(['adopt', 'finalize', '-o', 'json', '-q']);
    assert.equal(run.code, 0, run.stderr);
    data = JSON.parse(run.stdout) as FinalizeJson;
    assert.equal(data.ready, true);
    assert.equal(data.next, "helm upgrade RELEASE CHART --reuse-values --set adopt.hostLocalStore=''");
  });

  test('an unreachable API server is exit 2', () => {
    const kubeconfig = join(dir, 'unreachable.kubeconfig');
    writeFileSync(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        'current-context: c',
        'contexts: [{name: c, context: {cluster: c, user: u}}]',
        'clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]',
        'users: [{name: u, user: {token: t}}]',
      ].join('\n'),
    );
    const out = executable(['adopt', 'finalize'], kubeconfig);
    assert.equal(out.status, 2, out.stdout + out.stderr);
    assert.match(out.stderr, /cannot reach the Kubernetes API server/);
    assert.equal(out.stdout, '');
  });
});
