// ipamctl check against the real API server: a clean cluster (real allocations through core's
// allocator) exits 0; each seeded inconsistency is named by its check and exits 1.
import assert from 'node:assert/strict';
import { readFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { autoAssign, handleOf } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import type { Pod } from 'blockipam/core';
import type { Report } from '../../cli/audit/report.ts';
import {
  blockObject,
  createPod,
  deletePod,
  ipamctl,
  kubeSystemUID,
  poolObject,
  setPodIP,
  uniqueNamespace,
  cleanClusterHooks,
} from './cluster.ts';
import type { SeedAllocation } from './cluster.ts';

const dir = mkdtempSync(join(tmpdir(), 'ipamctl-check-'));
const ns = uniqueNamespace('ipamctl-check');
let ds: KubeDatastore;

/** Runs check -o and returns the run plus the parsed report. */
async function check(
  name: string,
): Promise<{ code: number; stdout: string; stderr: string; report: Report }> {
  const path = join(dir, `${name}.json`);
  const out = await ipamctl(['check', '-o', path, '--limit', '0']);
  return { ...out, report: JSON.parse(readFileSync(path, 'utf8')) as Report };
}

/** The set of problem kinds a report holds (information included). */
function kinds(report: Report): string[] {
  return Object.keys(report.byKind).sort();
}

const own = (ordinal: number, handle: string, extra: Partial<SeedAllocation> = {}): SeedAllocation => ({
  ordinal,
  handle,
  node: 'n1',
  ...extra,
});

/** Pool p4 (10.244.0.0/16, /26 blocks unless `blockSize`) — the pool most cases seed. */
async function seedPool(blockSize?: number): Promise<void> {
  await ds.pools.create(poolObject('p4', '10.244.0.0/16', blockSize));
}

/** One block as the allocator would write it: of pool p4 and affine to n1 unless `block` says otherwise. */
async function seedBlock(
  block: Partial<Parameters<typeof blockObject>[0]> & { cidr: string },
): Promise<void> {
  await ds.blocks.create(blockObject({ pool: 'p4', affinity: 'n1', ...block }));
}

describe('ipamctl check (real API server)', () => {
  cleanClusterHooks({ namespace: ns, nodes: ['n1', 'n2'], onReady: (d) => (ds = d) });

  test('a clean cluster with live pods allocated by core exits 0 and stamps the report', async () => {
    await seedPool();
    for (const [i, node] of ['n1', 'n1', 'n2', 'n2', 'n2'].entries()) {
      const pod = await createPod(ds, { namespace: ns, name: `pod-${i}`, node });
      const outcome = await autoAssign(ds, {
        handle: handleOf('k8s-pod-network', `c${i}`, 'eth0'),
        network: 'k8s-pod-network',
        node,
        pod: { namespace: ns, name: `pod-${i}`, uid: pod.metadata.uid ?? '' },
      });
      assert.ok(outcome.ok && outcome.ipv4, JSON.stringify(outcome));
      await setPodIP(ds, pod, outcome.ipv4.address);
    }
    const { code, stdout, report } = await check('clean');
    assert.equal(code, 0, stdout);
    assert.match(stdout, /Check complete: no problems found\./);
    assert.deepEqual(kinds(report), []);
    assert.equal(report.counts.allocations, 5);
    assert.equal(report.cluster.kubeSystemUID, await kubeSystemUID(ds));
    for (const kind of ['ipamblocks', 'ippools', 'pods', 'nodes'])
      assert.match(report.resourceVersions[kind] ?? '', /^\d+$/, kind);
  });

  test('one address in two blocks: duplicate-address names the address and both blocks', async () => {
    await seedPool();
    await seedBlock({ cidr: '10.244.0.0/26', allocations: [own(5, 'net.a.eth0')] });
    await seedBlock({
      cidr: '10.244.0.0/27',
      affinity: 'n2',
      allocations: [own(5, 'net.b.eth0', { node: 'n2' })],
    });
    const { code, stdout, report } = await check('duplicate');
    assert.equal(code, 1);
    // The /27 is not the pool's block size: the data path ignores it (one finding, not an overlap too).
    assert.deepEqual(kinds(report), ['duplicate-address', 'ignored-block']);
    const dup = report.problems.find((p) => p.kind === 'duplicate-address');
    assert.match(
      dup?.message ?? '',
      /10\.244\.0\.5 is allocated in IPAMBlock 10-244-0-0-26 .* and in IPAMBlock 10-244-0-0-27/,
    );
    assert.match(stdout, /One address allocated in more than one block \[duplicate-address\] \(1\)/);
  });

  // One seeded fault per case (pool p4 first): the exact set of kinds, the first finding's message,
  // exit 1 (0 when only information), then what else the case checks.
  const faults: {
    name: string;
    seed: () => Promise<unknown>;
    kinds: string[];
    message: RegExp;
    also?: (run: Awaited<ReturnType<typeof check>>) => void;
  }[] = [
    {
      name: 'allocation of a deleted pod: leaked-pod-deleted, offered for release',
      seed: () =>
        seedBlock({
          cidr: '10.244.0.0/26',
          allocations: [own(7, 'net.gone.eth0', { namespace: ns, pod: 'gone', podUID: 'uid-gone' })],
        }),
      kinds: ['leaked-pod-deleted'],
      message: new RegExp(
        `^10\\.244\\.0\\.7 \\(IPAMBlock 10-244-0-0-26, handle net\\.gone\\.eth0, sequence 1001\\) is held by pod ${ns}/gone`,
      ),
      also: ({ report }) =>
        assert.deepEqual(
          report.leaked.map((l) => [l.address, l.block, l.handle, l.sequence, l.reason]),
          [['10.244.0.7', '10-244-0-0-26', 'net.gone.eth0', 1001, 'leaked-pod-deleted']],
        ),
    },
    {
      name: 'allocation of a pod that now has another UID: leaked-pod-uid',
      seed: async () => {
        await createPod(ds, { namespace: ns, name: 'web-0', node: 'n1' });
        await seedBlock({
          cidr: '10.244.0.0/26',
          allocations: [
            own(9, 'net.old.eth0', { namespace: ns, pod: 'web-0', podUID: 'uid-of-the-earlier-web-0' }),
          ],
        });
      },
      kinds: ['leaked-pod-uid'],
      message: new RegExp(`pod ${ns}/web-0 \\(uid uid-of-the-earlier-web-0\\).*another UID`),
    },
    {
      name: 'allocation of a deleted node: leaked-node-deleted',
      seed: () =>
        seedBlock({ cidr: '10.244.0.0/26', allocations: [own(10, 'net.x.eth0', { node: 'gone-node' })] }),
      kinds: ['leaked-node-deleted'],
      message: /^10\.244\.0\.10 .* node gone-node no longer exists/,
      also: ({ report }) => assert.equal(report.leaked[0]?.reason, 'leaked-node-deleted'),
    },
    {
      name: 'a leaked allocation whose address a live pod uses is reported, never offered for release',
      seed: async () => {
        await createPod(ds, { namespace: ns, name: 'squatter', node: 'n1', ip: '10.244.0.7' });
        await seedBlock({
          cidr: '10.244.0.0/26',
          allocations: [own(7, 'net.gone.eth0', { namespace: ns, pod: 'gone', podUID: 'u1' })],
        });
      },
      kinds: ['ip-in-use-by-other-pod'],
      message: new RegExp(`but pod ${ns}/squatter uses 10\\.244\\.0\\.7: not offered for release$`),
      also: ({ report }) => assert.deepEqual(report.leaked, []),
    },
    {
      name: 'block outside every pool: ignored-block, outside-pools',
      seed: () => seedBlock({ cidr: '10.99.0.0/26', allocations: [own(4, 'net.y.eth0')] }),
      kinds: ['ignored-block'],
      message:
        /^IPAMBlock 10-99-0-0-26 is ignored by every agent and the allocator: outside-pools: 10\.99\.0\.0\/26 lies outside every IPPool$/,
    },
    {
      name: 'a block whose size differs from its pool’s blockSize: ignored-block, size-mismatch',
      seed: () => seedBlock({ cidr: '10.244.0.64/28', allocations: [own(3, 'net.s.eth0')] }),
      kinds: ['ignored-block'],
      message:
        /^IPAMBlock 10-244-0-64-28 is ignored by every agent and the allocator: size-mismatch: 10\.244\.0\.64\/28 is a \/28 but IPPool p4 has blockSize 26$/,
      also: ({ stdout }) => assert.match(stdout, /\[ignored-block\] \(1\)/),
    },
    {
      name: 'a block overlapping an older one through an overlapping pool: ignored-block names the one kept',
      seed: async () => {
        await seedBlock({ cidr: '10.244.0.0/26', allocations: [own(3, 'net.a.eth0')] });
        // Created after p4 and its block (creationTimestamp is the API server's): /28 blocks over p4.
        await ds.pools.create(poolObject('p4-late', '10.244.0.0/24', 28));
        await seedBlock({
          cidr: '10.244.0.0/28',
          pool: 'p4-late',
          affinity: 'n2',
          allocations: [own(4, 'net.b.eth0', { node: 'n2' })],
        });
      },
      kinds: ['ignored-block', 'overlapping-pools'],
      message:
        /^IPAMBlock 10-244-0-0-28 is ignored by every agent and the allocator: overlap: 10\.244\.0\.0\/28 overlaps the older IPAMBlock 10-244-0-0-26 \(10\.244\.0\.0\/26\); the data path keeps IPAMBlock 10-244-0-0-26$/,
      also: ({ report }) =>
        assert.deepEqual(report.problems[0]?.objects, ['IPAMBlock/10-244-0-0-28', 'IPAMBlock/10-244-0-0-26']),
    },
    {
      name: 'overlapping pools (created past validation, as kubectl could): overlapping-pools',
      seed: () => ds.pools.create(poolObject('p4-inner', '10.244.8.0/24')),
      kinds: ['overlapping-pools'],
      message: /^IPPool p4 \(10\.244\.0\.0\/16\) overlaps IPPool p4-inner/,
    },
    {
      name: 'broken block invariant (a reserved ordinal allocated): invalid-block with core’s message',
      seed: () => seedBlock({ cidr: '10.244.0.0/26', allocations: [own(0, 'net.z.eth0')] }),
      kinds: ['invalid-block'],
      message: /^IPAMBlock 10-244-0-0-26: ordinal 0 is reserved but allocated$/,
    },
    {
      name: 'pod IP with no allocation: pod-ip-unallocated names the pod',
      seed: async () => {
        await createPod(ds, { namespace: ns, name: 'orphan', node: 'n1', ip: '10.244.1.9' });
        // A pod IP outside every pool and block is not blockipam's (e.g. host network): ignored.
        await createPod(ds, { namespace: ns, name: 'elsewhere', node: 'n1', ip: '192.168.7.7' });
      },
      kinds: ['pod-ip-unallocated'],
      message: new RegExp(`pod ${ns}/orphan .* has IP 10\\.244\\.1\\.9, which no IPAMBlock allocates`),
      also: ({ report }) => assert.notEqual(report.resourceVersions['ipamblocks (confirmation)'], undefined),
    },
    {
      name: 'block affine to a deleted node: block-affinity-deleted-node',
      seed: () =>
        seedBlock({ cidr: '10.244.0.0/26', affinity: 'gone-node', allocations: [own(5, 'net.b.eth0')] }),
      kinds: ['block-affinity-deleted-node'],
      message: /^IPAMBlock 10-244-0-0-26 is affine to node gone-node, which does not exist$/,
    },
    {
      name: 'empty blocks are information only: exit 0',
      seed: () => seedBlock({ cidr: '10.244.0.64/26' }),
      kinds: ['empty-block'],
      message: /^IPAMBlock 10-244-0-64-26 /,
      also: ({ stdout }) =>
        assert.match(
          stdout,
          /Information \(1\):\n {2}Empty blocks \[empty-block\] \(1\):\n {4}- IPAMBlock 10-244-0-64-26/,
        ),
    },
  ];
  for (const fault of faults)
    test(fault.name, async () => {
      await seedPool(26);
      await fault.seed();
      const run = await check(fault.name.split(':')[0]?.replace(/\W+/g, '-') ?? 'fault');
      assert.deepEqual(kinds(run.report), fault.kinds);
      assert.equal(run.code, fault.kinds.includes('empty-block') ? 0 : 1, run.stdout);
      assert.match(run.report.problems[0]?.message ?? '', fault.message);
      fault.also?.(run);
    });

  test('pod object still there but its node deleted: pod-on-deleted-node, never offered for release', async () => {
    await seedPool();
    // One pod running with the address as its IP, one still pending (no IP yet).
    const running = await createPod(ds, {
      namespace: ns,
      name: 'running',
      node: 'gone-node',
      ip: '10.244.0.7',
    });
    const pending = await createPod(ds, { namespace: ns, name: 'pending', node: 'gone-node' });
    const owner = (pod: typeof running) => ({
      node: 'gone-node',
      namespace: ns,
      pod: pod.metadata.name,
      podUID: pod.metadata.uid ?? '',
    });
    await seedBlock({
      cidr: '10.244.0.0/26',
      allocations: [own(7, 'net.run.eth0', owner(running)), own(8, 'net.pend.eth0', owner(pending))],
    });
    const { code, stdout, report } = await check('pod-on-deleted-node');
    assert.equal(code, 1);
    assert.deepEqual(kinds(report), ['pod-on-deleted-node']);
    assert.deepEqual(report.leaked, []);
    assert.match(stdout, /Allocations of deleted nodes whose pod object still exists/);
    assert.match(
      stdout,
      new RegExp(
        `10\\.244\\.0\\.8 .* is held by pod ${ns}/pending .*: node gone-node no longer exists, but the pod object still does`,
      ),
    );
    assert.doesNotMatch(stdout, /ip-in-use-by-other-pod/);
  });
  test('a terminating pod whose IP was already released is not pod-ip-unallocated', async () => {
    await seedPool();
    // A finalizer keeps the pod object after the DELETE, with deletionTimestamp set: the window in
    // which CNI DEL has released the address but the pod still shows status.podIP.
    const pod = await ds.transport.request<Pod>('POST', `/api/v1/namespaces/${ns}/pods`, {
      body: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'leaving', finalizers: ['ipamctl-test/hold'] },
        spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
      },
    });
    await setPodIP(ds, pod, '10.244.1.9');
    await deletePod(ds, ns, 'leaving');
    const path = `/api/v1/namespaces/${ns}/pods/leaving`;
    try {
      assert.ok((await ds.getPod(ns, 'leaving'))?.metadata.deletionTimestamp);
      const { code, report } = await check('terminating');
      assert.equal(code, 0, JSON.stringify(report.problems));
      assert.deepEqual(kinds(report), []);
    } finally {
      await ds.transport.request('PATCH', path, {
        body: { metadata: { finalizers: null } },
        contentType: 'application/merge-patch+json',
      });
    }
  });
});
