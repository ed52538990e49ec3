// ipamctl show --node against the real API server: the node's affine blocks with their free
// counts, the agent's watermark (IPAMConfig minFreeAddressesPerNode) per eligible pool — below
// it or not, at maxBlocksPerNode or not — as the agent's own planner computes it; pools the
// agent would not pre-claim in (Manual, another nodeSelector, disabled) are not listed; whether a
// claim would fail and why (core's claimBlockedBy / cannotClaimText), disabled pools named.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { IPAM_CONFIG_NAME } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { blockObject, cleanClusterHooks, ipamctl, poolObject, uniqueNamespace } from './cluster.ts';

const ns = uniqueNamespace('ipamctl-shownode');
let ds: KubeDatastore;

interface ShownNode {
  node: string;
  nodeExists: boolean;
  watermark: number;
  maxBlocksPerNode: number;
  pools: {
    pool: string;
    family: number;
    blocks: number;
    free: number;
    belowWatermark: boolean;
    atBlockLimit: boolean;
    claim: string;
    why?: string;
    requested?: boolean;
  }[];
  unusablePools: { pool: string; why: string }[];
  blocks: { name: string; cidr: string; pool: string; capacity: number; used: number; free: number }[];
  allocations: { address: string; borrowed: boolean }[];
  routing: {
    ipamNode: boolean;
    addresses: string[];
    unrouted: { dst: string; block?: string; family?: number; reason: string; message: string }[];
  };
}

async function seed(spec: Record<string, unknown>): Promise<void> {
  await ds.configs.create({ metadata: { name: IPAM_CONFIG_NAME }, spec });
  await ds.pools.create(poolObject('p4', '10.245.0.0/24'));
  await ds.pools.create(poolObject('p6', 'fd00:245::/120', 122));
  await ds.pools.create({
    ...poolObject('manual', '10.246.0.0/24'),
    spec: { cidr: '10.246.0.0/24', assignmentMode: 'Manual' },
  });
  await ds.pools.create({
    ...poolObject('elsewhere', '10.247.0.0/24'),
    spec: { cidr: '10.247.0.0/24', nodeSelector: { matchLabels: { zone: 'b' } } },
  });
  const allocations = [
    { ordinal: 5, handle: 'net.a.eth0', node: 'sn1', namespace: ns, pod: 'a', podUID: 'uid-a' },
    { ordinal: 6, handle: 'net.b.eth0', node: 'sn2', namespace: ns, pod: 'b', podUID: 'uid-b' },
  ];
  await ds.blocks.create(blockObject({ cidr: '10.245.0.0/26', pool: 'p4', affinity: 'sn1', allocations }));
  await ds.blocks.create(blockObject({ cidr: '10.245.0.64/26', pool: 'p4', affinity: 'sn2' }));
}

describe('ipamctl show --node (real API server)', () => {
  cleanClusterHooks({ namespace: ns, nodes: ['sn1', 'sn2'], onReady: (d) => (ds = d) });

  test('free counts per block and per pool against minFreeAddressesPerNode', async () => {
    await seed({ minFreeAddressesPerNode: 60 });
    const run = await ipamctl(['show', '--node', 'sn1', '-o', 'json']);
    assert.equal(run.code, 0, run.stderr);
    const shown = JSON.parse(run.stdout) as ShownNode;
    assert.equal(shown.nodeExists, true);
    assert.equal(shown.watermark, 60);
    assert.equal(shown.maxBlocksPerNode, 20);
    // /26: 61 assignable, 2 allocated (sn2's borrowed .6 is in sn1's block: it counts against sn1).
    assert.deepEqual(shown.blocks, [
      { name: '10-245-0-0-26', cidr: '10.245.0.0/26', pool: 'p4', capacity: 61, used: 2, free: 59 },
    ]);
    assert.deepEqual(shown.pools, [
      { pool: 'p4', family: 4, blocks: 1, free: 59, belowWatermark: true, atBlockLimit: false, claim: 'ok' },
      { pool: 'p6', family: 6, blocks: 0, free: 0, belowWatermark: true, atBlockLimit: false, claim: 'ok' },
    ]);
    assert.deepEqual(shown.unusablePools, []);
    const table = await ipamctl(['show', '--node', 'sn1']);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^NODE sn1 +WATERMARK minFreeAddressesPerNode=60 +maxBlocksPerNode=20\n\n/);
    assert.match(
      table.stdout,
      /\nPOOL +FAMILY +BLOCKS +FREE +WATERMARK +BELOW +AT LIMIT +CLAIM\np4 +IPv4 +1 +59 +60 +yes +no +ok\np6 +IPv6 +0 +0 +60 +yes +no +ok\n\nCLAIMS by sn1: every pool can claim a block\n/,
    );
    assert.match(
      table.stdout,
      /\nBLOCK +CIDR +POOL +CAPACITY +USED +FREE\n10-245-0-0-26 +10\.245\.0\.0\/26 +p4 +61 +2 +59\n/,
    );
    assert.match(
      table.stdout,
      /\nADDRESS +BLOCK +BORROWED +POD +HANDLE\n10\.245\.0\.5 +10-245-0-0-26 +false +[^ ]+\/a +net\.a\.eth0\n$/,
    );
    // sn2: its own empty block is its headroom; its borrowed address is listed, not counted.
    const sn2 = JSON.parse((await ipamctl(['show', '--node', 'sn2', '-o', 'json'])).stdout) as ShownNode;
    assert.deepEqual(sn2.pools[0], {
      pool: 'p4',
      family: 4,
      blocks: 1,
      free: 61,
      belowWatermark: false,
      atBlockLimit: false,
      claim: 'ok',
    });
    assert.deepEqual(
      sn2.allocations.map((a) => [a.address, a.borrowed]),
      [['10.245.0.6', true]],
    );
  });

  test('at maxBlocksPerNode the node is reported at its limit; watermark 0 is never below', async () => {
    await seed({ minFreeAddressesPerNode: 60, maxBlocksPerNode: 1 });
    let shown = JSON.parse((await ipamctl(['show', '--node', 'sn1', '-o', 'json'])).stdout) as ShownNode;
    assert.deepEqual(
      shown.pools.map((p) => [p.pool, p.belowWatermark, p.atBlockLimit]),
      [
        ['p4', true, true],
        ['p6', true, false],
      ],
    );
    // why a claim would fail, core's words: pods borrow (no strictAffinity)
    assert.deepEqual(
      shown.pools.map((p) => [p.pool, p.claim, p.why]),
      [
        [
          'p4',
          'MaxBlocksPerNode',
          'the node holds 1 IPv4 block, the maxBlocksPerNode limit (1, IPAMConfig "default"); ADDs borrow from other nodes\' blocks once its blocks are full',
        ],
        ['p6', 'ok', undefined],
      ],
    );
    assert.match(
      (await ipamctl(['show', '--node', 'sn1'])).stdout,
      /\np4 +IPv4 +1 +59 +60 +yes +yes +no: MaxBlocksPerNode\n[^]*\nCLAIMS by sn1 that would fail:\n {2}p4: the node holds 1 IPv4 block, the maxBlocksPerNode limit \(1, IPAMConfig "default"\)/,
    );
    const config = await ds.configs.get(IPAM_CONFIG_NAME);
    await ds.configs.update({ ...config!, spec: { minFreeAddressesPerNode: 0 } });
    shown = JSON.parse((await ipamctl(['show', '--node', 'sn1', '-o', 'json'])).stdout) as ShownNode;
    assert.equal(shown.watermark, 0);
    assert.deepEqual(
      shown.pools.map((p) => p.belowWatermark),
      [false, false],
    );
    assert.match(
      (await ipamctl(['show', '--node', 'sn1'])).stdout,
      /minFreeAddressesPerNode=0 \(pre-claim off\)/,
    );
  });

  test('why a claim would fail: no unclaimed block under strictAffinity; a disabled pool is named', async () => {
    await seed({ strictAffinity: true });
    // fill p4's two unclaimed /26 ranges with sn2's blocks: nothing left for sn1 to claim
    for (const cidr of ['10.245.0.128/26', '10.245.0.192/26'])
      await ds.blocks.create(blockObject({ cidr, pool: 'p4', affinity: 'sn2' }));
    await ds.pools.create({
      ...poolObject('off', '10.248.0.0/24'),
      spec: { cidr: '10.248.0.0/24', disabled: true },
    });
    const shown = JSON.parse((await ipamctl(['show', '--node', 'sn1', '-o', 'json'])).stdout) as ShownNode;
    assert.deepEqual(
      shown.pools.map((p) => [p.pool, p.claim, p.why]),
      [
        [
          'p4',
          'NoUnclaimedBlocks',
          'IP pool "p4" has no unclaimed block left; with strictAffinity, ADDs fail once its blocks are full',
        ],
        ['p6', 'ok', undefined],
      ],
    );
    assert.deepEqual(shown.unusablePools, [{ pool: 'off', why: 'disabled (spec.disabled)' }]);
    assert.match(
      (await ipamctl(['show', '--node', 'sn1'])).stdout,
      /\nCLAIMS by sn1 that would fail:\n {2}p4: IP pool "p4" has no unclaimed block left; [^\n]*\n {2}off: disabled \(spec\.disabled\): no claim uses it\n/,
    );
  });

  // A Node that does not exist exited 0 with an empty view: now 2 naming it, or — while blocks or
  // addresses are still held for it — the view and exit 1 naming it.
  test('a node without a Node object: exit 2 naming it, or 1 with what is held for it (default watermark 16)', async () => {
    const none = await ipamctl(['show', '--node', 'nobody']);
    assert.deepEqual(none, {
      code: 2,
      stdout: '',
      stderr:
        'ipamctl: Node nobody does not exist and holds no block or address (kubectl get nodes lists them)\n',
    });
    await ds.pools.create(poolObject('p4', '10.245.0.0/24'));
    await ds.blocks.create(blockObject({ cidr: '10.245.0.128/26', pool: 'p4', affinity: 'gone-node' }));
    const table = await ipamctl(['show', '--node', 'gone-node']);
    assert.equal(table.code, 1, table.stderr);
    assert.match(
      table.stderr,
      /^ipamctl: Node gone-node does not exist, yet 1 block\(s\) and 0 address\(es\) are held for it/,
    );
    assert.match(
      table.stdout,
      /^NODE gone-node \(no Node object: deleted, or not registered yet\) +WATERMARK minFreeAddressesPerNode=16 /,
    );
    const shown = JSON.parse(
      (await ipamctl(['show', '--node', 'gone-node', '-o', 'json'])).stdout,
    ) as ShownNode;
    assert.equal(shown.nodeExists, false);
    assert.deepEqual(
      shown.blocks.map((b) => [b.name, b.free]),
      [['10-245-0-128-26', 61]],
    );
  });

  test('the blocks other nodes cannot route to: an IPv6 block of a node without an IPv6 InternalIP', async () => {
    await seed({});
    await ds.blocks.create(blockObject({ cidr: 'fd00:245::/122', pool: 'p6', affinity: 'sn1' }));
    // before the controller wrote sn1's IPAMNode, no block is routed
    let shown = JSON.parse((await ipamctl(['show', '--node', 'sn1', '-o', 'json'])).stdout) as ShownNode;
    assert.equal(shown.routing.ipamNode, false);
    assert.deepEqual(
      shown.routing.unrouted.map((u) => [u.dst, u.reason]),
      [
        ['10.245.0.0/26', 'no-ipamnode'],
        ['fd00:245::/122', 'no-ipamnode'],
      ],
    );
    // the IPAMNode as the controller writes it for a Node with only an IPv4 InternalIP
    await ds.ipamNodes.create({
      metadata: { name: 'sn1' },
      spec: { addresses: ['192.0.2.1'], blocks: ['10.245.0.0/26', 'fd00:245::/122'], borrowed: [] },
    });
    shown = JSON.parse((await ipamctl(['show', '--node', 'sn1', '-o', 'json'])).stdout) as ShownNode;
    assert.deepEqual(shown.routing.addresses, ['192.0.2.1']);
    assert.deepEqual(
      shown.routing.unrouted.map((u) => [u.block, u.dst, u.family, u.reason]),
      [['fd00-245---122', 'fd00:245::/122', 6, 'no-internal-ip']],
    );
    const table = await ipamctl(['show', '--node', 'sn1']);
    assert.equal(table.code, 0, table.stderr);
    assert.match(
      table.stdout,
      /\nROUTES from other nodes to sn1: next hops 192\.0\.2\.1; 1 not routed:\n {2}fd00-245---122 \(fd00:245::\/122\): node sn1 has no IPv6 InternalIP /,
    );
  });

  test('a full Manual pool a pending pod on the node requests is listed, its claim failing', async () => {
    await seed({ minFreeAddressesPerNode: 4 });
    // one /28 block, claimed by sn2: nothing left for sn1
    await ds.pools.create({
      ...poolObject('tiny', '10.248.0.0/28', 28),
      spec: { cidr: '10.248.0.0/28', blockSize: 28, assignmentMode: 'Manual' },
    });
    await ds.blocks.create(blockObject({ cidr: '10.248.0.0/28', pool: 'tiny', affinity: 'sn2' }));
    const before = JSON.parse((await ipamctl(['show', '--node', 'sn1', '-o', 'json'])).stdout) as ShownNode;
    assert.deepEqual(
      before.pools.map((p) => p.pool),
      ['p4', 'p6'],
      'no pod requests it: not listed',
    );
    await ds.transport.request('POST', `/api/v1/namespaces/${ns}/pods`, {
      body: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'waits', annotations: { 'ipam.blockipam.io/ippools': '["tiny"]' } },
        spec: { nodeName: 'sn1', containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
      },
    });
    const shown = JSON.parse((await ipamctl(['show', '--node', 'sn1', '-o', 'json'])).stdout) as ShownNode;
    const tiny = shown.pools.find((p) => p.pool === 'tiny');
    assert.deepEqual(tiny && { ...tiny, why: undefined }, {
      pool: 'tiny',
      family: 4,
      blocks: 0,
      free: 0,
      belowWatermark: true,
      atBlockLimit: false,
      claim: 'NoUnclaimedBlocks',
      why: undefined,
      requested: true,
    });
    const table = (await ipamctl(['show', '--node', 'sn1'])).stdout;
    assert.match(
      table,
      /\ntiny +IPv4 +0 +0 +4 +yes +no +no: NoUnclaimedBlocks \(Manual: pending pods request it\)\n/,
    );
    assert.match(table, /\nCLAIMS by sn1 that would fail:\n(.*\n)* {2}tiny: /);
  });
});
