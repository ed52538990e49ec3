// ipamctl adopt plan against the real API server: Nodes with podCIDRs (spec.podCIDR, podCIDRs),
// Pods whose addresses are set through the status subresource as host-local's would be, the real
// executable's exit code and output — clean (0), a pod address outside its node's podCIDR (1,
// naming it), an IPv6 podCIDR, /26 blocks that reserve a pod's address, another node's block over
// the podCIDR, --node, and pods that do not count (host-network, Succeeded).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
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
const ns = uniqueNamespace('ipamctl-adopt');
let ds: KubeDatastore;

/** Creates a Node with podCIDRs (spec.podCIDR is the first), labelled for cleanup. */
async function createPodCIDRNode(name: string, podCIDRs: string[]): Promise<void> {
  await ds.transport.request('POST', '/api/v1/nodes', {
    body: {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name, labels: { [TEST_LABEL]: '1' } },
      spec: { podCIDR: podCIDRs[0], podCIDRs },
    },
  });
}

/** Creates a Pod on `node` and sets its status (phase, podIPs) through the status subresource. */
async function createPodWithIPs(options: {
  name: string;
  node: string;
  ips: string[];
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
  const status = {
    phase: options.phase ?? 'Running',
    podIP: options.ips[0],
    podIPs: options.ips.map((ip) => ({ ip })),
  };
  await ds.transport.request('PUT', `/api/v1/namespaces/${ns}/pods/${options.name}/status`, {
    body: { ...pod, status },
  });
}

/** The real executable, as an operator runs it. */
function executable(args: string[]): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, [main, ...args, '--kubeconfig', controlPlane().adminKubeconfig], {
    encoding: 'utf8',
  });
}

interface PlanJson {
  nodes: {
    node: string;
    podCIDRs: { cidr: string; family: number; pool?: string; blockSize?: number; blocks?: number }[];
    addresses: { address: string; pod: string; podCIDR?: string; block?: string; ordinal?: number }[];
    conflicts: number;
  }[];
  conflicts: { kind: string; node: string; message: string; fix: string; address?: string; block?: string }[];
}

/** The plan as JSON (in-process), with only the conflicts of `nodes`. */
async function planOf(nodes: readonly string[]): Promise<{ code: number; plan: PlanJson }> {
  const run = await ipamctl(['adopt', 'plan', '-o', 'json', '-q']);
  assert.notEqual(run.code, 2, run.stderr);
  const plan = JSON.parse(run.stdout) as PlanJson;
  return {
    code: run.code,
    plan: {
      nodes: plan.nodes.filter((n) => nodes.includes(n.node)),
      conflicts: plan.conflicts.filter((c) => nodes.includes(c.node)),
    },
  };
}

/** A podCIDR pool over kind's cluster CIDR: each node's podCIDR its block(s). */
function podCIDRPool(blockSize: number): IPPool {
  const pool = poolObject('cluster', '10.244.0.0/16', blockSize);
  return { ...pool, spec: { ...pool.spec, podCIDRBlocks: true } };
}

/** Two kind-shaped nodes (one /24 each), a pool with one /24 block per podCIDR, one pod on each. */
async function kindShaped(blockSize = 24): Promise<void> {
  await ds.pools.create(podCIDRPool(blockSize));
  await createPodCIDRNode('adopt-1', ['10.244.1.0/24']);
  await createPodCIDRNode('adopt-2', ['10.244.2.0/24']);
  await createPodWithIPs({ name: 'a', node: 'adopt-1', ips: ['10.244.1.2'] });
  await createPodWithIPs({ name: 'b', node: 'adopt-2', ips: ['10.244.2.2'] });
  // neither counts: the node's own address, and a finished pod's stale one
  await createPodWithIPs({ name: 'host', node: 'adopt-1', ips: ['192.168.10.1'], hostNetwork: true });
  await createPodWithIPs({ name: 'done', node: 'adopt-1', ips: ['10.99.0.1'], phase: 'Succeeded' });
}

describe('ipamctl adopt plan (real API server)', () => {
  cleanClusterHooks({ namespace: ns, nodes: [], onReady: (d) => (ds = d) });

  test('a kind-shaped cluster: each podCIDR one block, each address its ordinal; exit 0', async () => {
    await kindShaped();
    const { code, plan } = await planOf(['adopt-1', 'adopt-2']);
    assert.deepEqual(plan.conflicts, []);
    assert.deepEqual(
      plan.nodes.map((n) => [
        n.node,
        n.podCIDRs,
        n.addresses.map((a) => `${a.address} ${a.block} ${a.ordinal}`),
      ]),
      [
        [
          'adopt-1',
          [
            {
              cidr: '10.244.1.0/24',
              family: 4,
              pool: 'cluster',
              blockSize: 24,
              blocks: 1,
              existingBlocks: [],
              adoptable: true,
            },
          ],
          ['10.244.1.2 10-244-1-0-24 2'],
        ],
        [
          'adopt-2',
          [
            {
              cidr: '10.244.2.0/24',
              family: 4,
              pool: 'cluster',
              blockSize: 24,
              blocks: 1,
              existingBlocks: [],
              adoptable: true,
            },
          ],
          ['10.244.2.2 10-244-2-0-24 2'],
        ],
      ],
    );
    assert.equal(code, 0);
    for (const node of ['adopt-1', 'adopt-2']) {
      const out = executable(['adopt', 'plan', '--node', node]);
      assert.equal(out.status, 0, out.stdout + out.stderr);
      assert.match(out.stdout, new RegExp(`\\n${node} +10\\.244\\.\\d\\.0/24 +cluster +1 × /24 +- +1 +0\\n`));
      assert.match(
        out.stdout,
        /no conflict: every pod address can stay where it is\. Nothing was changed\.\n$/,
      );
    }
  });

  test("a pod address outside its node's podCIDR makes adopt plan exit non-zero naming it", async () => {
    await kindShaped();
    await createPodWithIPs({ name: 'stray', node: 'adopt-1', ips: ['10.244.2.9'] });
    const out = executable(['adopt', 'plan']);
    assert.equal(out.status, 1, out.stdout + out.stderr);
    assert.match(
      out.stdout,
      new RegExp(
        `outside-podcidr: pod ${ns}/stray on node adopt-1 has 10\\.244\\.2\\.9, outside its node's podCIDRs 10\\.244\\.1\\.0/24 \\(it is in node adopt-2's podCIDR 10\\.244\\.2\\.0/24\\)\\n {4}what to fix: .*kubectl delete pod -n ${ns} stray`,
      ),
    );
    assert.match(out.stdout, /conflict\(s\): fix each as it says, then run ipamctl adopt plan again\./);
    // the other node alone is clean
    assert.equal(executable(['adopt', 'plan', '--node', 'adopt-2']).status, 0);
    const { plan } = await planOf(['adopt-1', 'adopt-2']);
    assert.deepEqual(
      plan.conflicts.map((c) => `${c.kind} ${c.node} ${c.address ?? ''}`),
      ['outside-podcidr adopt-1 10.244.2.9'],
    );
  });

  test('an IPv6 podCIDR is reported not adoptable yet, the IPv4 one still planned', async () => {
    await ds.pools.create(podCIDRPool(24));
    await createPodCIDRNode('adopt-ds', ['10.244.3.0/24', 'fd00:10:244:3::/64']);
    await createPodWithIPs({ name: 'dual', node: 'adopt-ds', ips: ['10.244.3.2', 'fd00:10:244:3::2'] });
    const out = executable(['adopt', 'plan', '--node', 'adopt-ds']);
    assert.equal(out.status, 1, out.stdout + out.stderr);
    assert.match(
      out.stdout,
      /ipv6-podcidr: podCIDR fd00:10:244:3::\/64 of node adopt-ds: not adoptable yet \(IPv6 podCIDRs cannot be blocks\)/,
    );
    assert.match(out.stdout, /\nadopt-ds +fd00:10:244:3::\/64 +- +not adoptable yet /);
    const { plan } = await planOf(['adopt-ds']);
    assert.deepEqual(
      plan.nodes[0]?.addresses.map((a) => `${a.address} ${a.block ?? '-'}`),
      ['10.244.3.2 10-244-3-0-24', 'fd00:10:244:3::2 -'],
    );
  });

  test('/26 blocks reserve a pod address, and a block of another node covers the podCIDR', async () => {
    await kindShaped(26);
    await createPodWithIPs({ name: 'gw', node: 'adopt-1', ips: ['10.244.1.65'] });
    await ds.blocks.create(blockObject({ cidr: '10.244.2.64/26', pool: 'cluster', affinity: 'adopt-1' }));
    const { code, plan } = await planOf(['adopt-1', 'adopt-2']);
    assert.equal(code, 1);
    assert.deepEqual(
      plan.conflicts.map((c) => `${c.kind} ${c.node} ${c.block ?? ''}`),
      ['overlapping-block adopt-2 10-244-2-64-26', 'reserved-ordinal adopt-1 10-244-1-64-26'],
    );
    assert.match(plan.conflicts[0]?.message ?? '', /it is affine to node adopt-1/);
    assert.match(plan.conflicts[1]?.fix ?? '', /blockSize 24/);
    assert.equal(plan.nodes[0]?.podCIDRs[0]?.blocks, 4);
  });

  test('--node naming no Node is exit 2', async () => {
    const out = await ipamctl(['adopt', 'plan', '--node', 'no-such-node']);
    assert.equal(out.code, 2);
    assert.match(out.stderr, /Node no-such-node does not exist/);
  });
});
