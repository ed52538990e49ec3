// The adoption plan on plain objects: a clean node, podCIDR tiling per pool block size, the
// conflicts (reserved-ordinal clash, pod outside its podCIDR, IPv6 podCIDR, no pool, blocks larger
// than the podCIDR, overlapping blocks, reservations, duplicates, overlapping podCIDRs), the pods
// that do not count (host-network, Succeeded, Failed, no address) and the notes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { allocateOrdinal, mustParseCidr, newBlock, planAdoption } from 'blockipam/core';
import type { AdoptionInput, AdoptionPlan, IPAMBlock, IPPool, Pod, PodCIDRNode } from 'blockipam/core';
import { pool, reservation } from './fixtures.ts';

const node = (name: string, podCIDRs: string[], labels: Record<string, string> = {}): PodCIDRNode => ({
  metadata: { name, labels },
  spec: { ...(podCIDRs[0] ? { podCIDR: podCIDRs[0] } : {}), podCIDRs },
});

const pod = (
  name: string,
  nodeName: string,
  ips: string[],
  extra: { hostNetwork?: boolean; phase?: string } = {},
): Pod => ({
  metadata: { name, namespace: 'ns', uid: `uid-${name}` },
  spec: { nodeName, ...(extra.hostNetwork ? { hostNetwork: true } : {}) },
  status: { phase: extra.phase ?? 'Running', podIP: ips[0], podIPs: ips.map((ip) => ({ ip })) },
});

const cluster = (blockSize?: number): IPPool =>
  pool('cluster', { cidr: '10.244.0.0/16', podCIDRBlocks: true, ...(blockSize ? { blockSize } : {}) });

/** A block affine to `affinity` holding `allocations` (ordinal → pod name on a node). */
function block(
  cidr: string,
  affinity: string | null,
  allocations: [number, string, string][] = [],
): IPAMBlock {
  let b = newBlock({ cidr: mustParseCidr(cidr), pool: 'cluster', node: affinity, nowMs: 1000 });
  for (const [ordinal, name, nodeName] of allocations) {
    const owner = {
      handle: `net.${name}.eth0`,
      namespace: 'ns',
      pod: name,
      podUID: `uid-${name}`,
      node: nodeName,
    };
    b = allocateOrdinal(b, ordinal, owner, 2000)!.block;
  }
  return b;
}

function plan(input: Partial<AdoptionInput>): AdoptionPlan {
  return planAdoption({ nodes: [], pods: [], pools: [], blocks: [], reservations: [], ...input });
}

const kinds = (p: AdoptionPlan): string[] => p.conflicts.map((c) => c.kind);

describe('planAdoption', () => {
  it('a clean node: one /24 block, each address with its block and ordinal', () => {
    const p = plan({
      nodes: [node('n1', ['10.244.1.0/24'])],
      pods: [pod('b', 'n1', ['10.244.1.3']), pod('a', 'n1', ['10.244.1.2'])],
      pools: [cluster(24)],
    });
    assert.deepEqual(p.conflicts, []);
    assert.deepEqual(p.notes, []);
    assert.deepEqual(p.nodes, [
      {
        node: 'n1',
        podCIDRs: [
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
        addresses: [
          {
            address: '10.244.1.2',
            namespace: 'ns',
            pod: 'a',
            podCIDR: '10.244.1.0/24',
            block: '10-244-1-0-24',
            ordinal: 2,
          },
          {
            address: '10.244.1.3',
            namespace: 'ns',
            pod: 'b',
            podCIDR: '10.244.1.0/24',
            block: '10-244-1-0-24',
            ordinal: 3,
          },
        ],
        conflicts: 0,
      },
    ]);
  });

  describe('tiling: block count per podCIDR and block size', () => {
    const cases: [string, number, number | undefined, string[]][] = [
      ['10.244.1.0/24', 24, 1, []],
      ['10.244.1.0/24', 26, 4, ['split-podcidr']], // the default size: each /26 reserves its own
      ['10.244.1.0/24', 28, 16, ['split-podcidr']],
      ['10.244.0.0/20', 20, 1, []],
      ['10.244.0.0/20', 24, 16, ['split-podcidr']],
      ['10.244.1.0/25', 26, 2, ['split-podcidr']],
      ['10.244.1.0/27', 26, undefined, []], // block-size conflict
    ];
    for (const [cidr, blockSize, blocks, notes] of cases)
      it(`${cidr} in /${blockSize} blocks`, () => {
        const p = plan({ nodes: [node('n1', [cidr])], pools: [cluster(blockSize)] });
        assert.equal(p.nodes[0]?.podCIDRs[0]?.blocks, blocks);
        assert.deepEqual(
          p.notes.map((n) => n.kind),
          notes,
        );
        assert.deepEqual(kinds(p), blocks === undefined ? ['block-size'] : []);
      });
  });

  it('blocks larger than the podCIDR: block-size names the pool and the size to use', () => {
    const p = plan({ nodes: [node('n1', ['10.244.1.0/27'])], pools: [cluster(26)] });
    assert.match(
      p.conflicts[0]?.message ?? '',
      /IPPool cluster's blocks \(\/26\) are larger than podCIDR 10\.244\.1\.0\/27/,
    );
    assert.match(p.conflicts[0]?.fix ?? '', /blockSize 27/);
    assert.equal(p.nodes[0]?.podCIDRs[0]?.adoptable, false);
  });

  it('reserved-ordinal: /26 tiles of a /24 make .63, .64 and .65 unassignable; a /24 block does not', () => {
    const pods = ['63', '64', '65', '66'].map((o) => pod(`p${o}`, 'n1', [`10.244.1.${o}`]));
    const split = plan({ nodes: [node('n1', ['10.244.1.0/24'])], pods, pools: [cluster(26)] });
    assert.deepEqual(kinds(split), ['reserved-ordinal', 'reserved-ordinal', 'reserved-ordinal']);
    assert.deepEqual(
      split.conflicts.map((c) => `${c.address} ${c.block}`),
      ['10.244.1.63 10-244-1-0-26', '10.244.1.64 10-244-1-64-26', '10.244.1.65 10-244-1-64-26'],
    );
    assert.match(
      split.conflicts[2]?.message ?? '',
      /pod ns\/p65 on node n1 has 10\.244\.1\.65, ordinal 1 of block 10-244-1-64-26/,
    );
    assert.match(split.conflicts[2]?.fix ?? '', /blockSize 24 .*kubectl delete pod -n ns p65/);
    const whole = plan({ nodes: [node('n1', ['10.244.1.0/24'])], pods, pools: [cluster(24)] });
    assert.deepEqual(kinds(whole), []);
  });

  it("outside-podcidr: names pod, node, address, the node's podCIDR and whose podCIDR holds it", () => {
    const p = plan({
      nodes: [node('n1', ['10.244.1.0/24']), node('n2', ['10.244.2.0/24'])],
      pods: [pod('stray', 'n1', ['10.244.2.9']), pod('far', 'n2', ['192.168.0.9'])],
      pools: [cluster(24)],
    });
    assert.deepEqual(kinds(p), ['outside-podcidr', 'outside-podcidr']);
    assert.equal(
      p.conflicts[0]?.message,
      "pod ns/stray on node n1 has 10.244.2.9, outside its node's podCIDRs 10.244.1.0/24 (it is in node n2's podCIDR 10.244.2.0/24)",
    );
    assert.match(
      p.conflicts[1]?.message ?? '',
      /^pod ns\/far on node n2 has 192\.168\.0\.9, outside its node's podCIDRs 10\.244\.2\.0\/24$/,
    );
    assert.match(p.conflicts[1]?.fix ?? '', /kubectl delete pod -n ns far/);
    assert.deepEqual(p.nodes[0]?.addresses, [{ address: '10.244.2.9', namespace: 'ns', pod: 'stray' }]);
  });

  it('a node without podCIDR: its pod addresses are outside; without pods only a note', () => {
    const p = plan({
      nodes: [node('bare', []), node('empty', [])],
      pods: [pod('x', 'bare', ['10.244.9.9'])],
    });
    assert.deepEqual(kinds(p), ['outside-podcidr']);
    assert.match(p.conflicts[0]?.message ?? '', /outside any podCIDR \(the node has none\)/);
    assert.deepEqual(
      p.notes.map((n) => `${n.kind} ${n.node}`),
      ['no-podcidr empty'],
    );
  });

  it('skips host-network, Succeeded, Failed and address-less pods; keeps Pending and Unknown with addresses', () => {
    const p = plan({
      nodes: [node('n1', ['10.244.1.0/24'])],
      pods: [
        pod('host', 'n1', ['192.168.0.5'], { hostNetwork: true }),
        pod('done', 'n1', ['192.168.0.6'], { phase: 'Succeeded' }),
        pod('failed', 'n1', ['192.168.0.7'], { phase: 'Failed' }),
        pod('new', 'n1', []),
        pod('pending', 'n1', ['10.244.1.8'], { phase: 'Pending' }),
        pod('unknown', 'n1', ['10.244.1.9'], { phase: 'Unknown' }),
      ],
      pools: [cluster(24)],
    });
    assert.deepEqual(kinds(p), []);
    assert.deepEqual(
      p.nodes[0]?.addresses.map((a) => a.pod),
      ['pending', 'unknown'],
    );
  });

  it('IPv6 podCIDR: a not-adoptable-yet conflict, the IPv4 podCIDR still planned', () => {
    const p = plan({
      nodes: [node('n1', ['10.244.1.0/24', 'fd00:10:244:1::/64'])],
      pods: [pod('a', 'n1', ['10.244.1.2', 'fd00:10:244:1::2'])],
      pools: [cluster(24)],
    });
    assert.deepEqual(kinds(p), ['ipv6-podcidr']);
    assert.equal(
      p.conflicts[0]?.message,
      'podCIDR fd00:10:244:1::/64 of node n1: not adoptable yet (IPv6 podCIDRs cannot be blocks)',
    );
    assert.deepEqual(p.nodes[0]?.podCIDRs[1], {
      cidr: 'fd00:10:244:1::/64',
      family: 6,
      existingBlocks: [],
      adoptable: false,
    });
    assert.deepEqual(p.nodes[0]?.addresses[1], {
      address: 'fd00:10:244:1::2',
      namespace: 'ns',
      pod: 'a',
      podCIDR: 'fd00:10:244:1::/64',
    });
  });

  it('no-pool: suggests a pool over every podCIDR with the podCIDR prefix as block size', () => {
    const p = plan({ nodes: [node('n1', ['10.244.1.0/24']), node('n2', ['10.244.3.0/24'])], pools: [] });
    assert.deepEqual(kinds(p), ['no-pool', 'no-pool']);
    assert.match(
      p.conflicts[0]?.message ?? '',
      /no IPPool node n1 may use covers its podCIDR 10\.244\.1\.0\/24: no IPPool overlaps it/,
    );
    assert.match(
      p.conflicts[0]?.fix ?? '',
      /ipamctl pool create NAME --cidr 10\.244\.0\.0\/22 --block-size 24 --podcidr-blocks --disabled/,
    );
  });

  it('not-podcidr-pool: a covering pool that is no podCIDR pool, with the patch that makes it one', () => {
    const plain = pool('cluster', { cidr: '10.244.0.0/16', blockSize: 24 });
    const p = plan({ nodes: [node('n1', ['10.244.1.0/24'])], pools: [plain] });
    assert.deepEqual(kinds(p), ['not-podcidr-pool']);
    assert.match(
      p.conflicts[0]?.message ?? '',
      /IPPool cluster covers podCIDR 10\.244\.1\.0\/24 of node n1 but is no podCIDR pool/,
    );
    assert.match(
      p.conflicts[0]?.fix ?? '',
      /kubectl patch ippool cluster --type=merge -p '\{"spec":\{"podCIDRBlocks":true\}\}'/,
    );
  });

  it('a disabled covering pool holds the podCIDR: nothing is handed out from it meanwhile', () => {
    const off = pool('cluster', {
      cidr: '10.244.0.0/16',
      blockSize: 24,
      disabled: true,
      podCIDRBlocks: true,
    });
    const p = plan({ nodes: [node('n1', ['10.244.1.0/24'])], pools: [off] });
    assert.deepEqual(kinds(p), []);
    assert.equal(p.nodes[0]?.podCIDRs[0]?.poolDisabled, true);
  });

  it('no-pool: a pool whose nodeSelector excludes the node is named', () => {
    const zoned = pool('zoned', {
      cidr: '10.244.0.0/16',
      blockSize: 24,
      podCIDRBlocks: true,
      nodeSelector: { matchLabels: { zone: 'a' } },
    });
    const p = plan({ nodes: [node('n1', ['10.244.1.0/24'], { zone: 'b' })], pools: [zoned] });
    assert.match(
      p.conflicts[0]?.message ?? '',
      /IPPool zoned \(10\.244\.0\.0\/16\) has a nodeSelector that excludes the node/,
    );
    const ok = plan({ nodes: [node('n1', ['10.244.1.0/24'], { zone: 'a' })], pools: [zoned] });
    assert.deepEqual(kinds(ok), []);
  });

  describe('IPAMBlocks over the podCIDR', () => {
    const nodes = [node('n1', ['10.244.1.0/24']), node('n2', ['10.244.2.0/24'])];
    const pods = [pod('a', 'n1', ['10.244.1.2']), pod('b', 'n2', ['10.244.2.2'])];
    const cases: [string, IPAMBlock, string[], RegExp | undefined][] = [
      // the node's own tile, empty or holding its pod's own address: exists already, no conflict
      ['own empty tile', block('10.244.1.0/24', 'n1'), ['10-244-1-0-24'], undefined],
      ['own tile, own pod', block('10.244.1.0/24', 'n1', [[2, 'a', 'n1']]), ['10-244-1-0-24'], undefined],
      ['unowned empty tile', block('10.244.1.0/24', null), ['10-244-1-0-24'], undefined],
      // another node's block over n1's podCIDR
      ['affine to another node', block('10.244.1.0/24', 'n2'), [], /it is affine to node n2/],
      // n2's pod borrowed an address from a block over n1's podCIDR
      [
        "another node's pod",
        block('10.244.1.0/24', 'n1', [[9, 'b', 'n2']]),
        [],
        /it holds 1 address\(es\) not of node n1's pods: 10\.244\.1\.9 \(pod ns\/b on node n2\)/,
      ],
      // the address is n1's pod's, recorded for another pod name: not its own
      [
        'recorded for another pod',
        block('10.244.1.0/24', 'n1', [[2, 'gone', 'n1']]),
        [],
        /10\.244\.1\.2 \(pod ns\/gone on node n1\)/,
      ],
      // a block of another size than the pool's
      [
        'another size',
        block('10.244.1.0/26', 'n1'),
        [],
        /it is a \/26 block, not one of the podCIDR's \/24 blocks/,
      ],
      // a block wider than the podCIDR
      ['wider', block('10.244.0.0/23', null), [], /it reaches beyond the podCIDR \(10\.244\.0\.0\/23\)/],
    ];
    for (const [name, b, existing, conflict] of cases)
      it(name, () => {
        const p = plan({ nodes, pods, pools: [cluster(24)], blocks: [b] });
        assert.deepEqual(p.nodes[0]?.podCIDRs[0]?.existingBlocks, existing);
        const overlapping = p.conflicts.filter((c) => c.kind === 'overlapping-block' && c.node === 'n1');
        if (!conflict) return assert.deepEqual(kinds(p), []);
        assert.equal(overlapping.length, 1, JSON.stringify(p.conflicts));
        assert.match(overlapping[0]?.message ?? '', conflict);
        assert.equal(overlapping[0]?.block, b.metadata.name);
        assert.match(overlapping[0]?.fix ?? '', new RegExp(`kubectl delete ipamblock ${b.metadata.name}`));
      });
  });

  it('blocks before, after and around the podCIDR: only those over it are judged', () => {
    const blocks = [
      block('10.244.0.192/26', 'n0'), // ends just before
      block('10.244.1.0/24', 'n1'),
      block('10.244.2.0/26', 'n2'), // starts just after
      block('fd00::/120', 'n0'), // another family
      block('10.240.0.0/20', 'n0'), // a wide block far before: the search must not stop at it
    ];
    const p = plan({ nodes: [node('n1', ['10.244.1.0/24'])], pools: [cluster(24)], blocks });
    assert.deepEqual(kinds(p), []);
    assert.deepEqual(p.nodes[0]?.podCIDRs[0]?.existingBlocks, ['10-244-1-0-24']);
    const wide = plan({
      nodes: [node('n1', ['10.244.1.0/24'])],
      pools: [cluster(24)],
      blocks: [...blocks, block('10.244.0.0/20', null)],
    });
    assert.deepEqual(
      wide.conflicts.map((c) => `${c.kind} ${c.block ?? ''}`),
      ['overlapping-block 10-244-0-0-20'],
    );
  });

  it('reserved-address: a pod address inside an IPReservation', () => {
    const p = plan({
      nodes: [node('n1', ['10.244.1.0/24'])],
      pods: [pod('a', 'n1', ['10.244.1.20'])],
      pools: [cluster(24)],
      reservations: [reservation('keep', ['10.244.1.16/28'])],
    });
    assert.deepEqual(kinds(p), ['reserved-address']);
    assert.match(p.conflicts[0]?.message ?? '', /10\.244\.1\.20, inside IPReservation keep/);
  });

  it('duplicate-address: one address on two live pods, reported once', () => {
    const p = plan({
      nodes: [node('n1', ['10.244.1.0/24'])],
      pods: [pod('a', 'n1', ['10.244.1.2']), pod('b', 'n1', ['10.244.1.2'])],
      pools: [cluster(24)],
    });
    assert.deepEqual(kinds(p), ['duplicate-address']);
    assert.match(
      p.conflicts[0]?.message ?? '',
      /10\.244\.1\.2 is the address of 2 live pods: ns\/a on node n1, ns\/b on node n1/,
    );
  });

  it('overlapping-podcidr: two nodes given overlapping podCIDRs', () => {
    const p = plan({
      nodes: [node('n1', ['10.244.0.0/23']), node('n2', ['10.244.1.0/24'])],
      pools: [cluster(23)],
    });
    assert.ok(kinds(p).includes('overlapping-podcidr'));
    assert.match(
      p.conflicts[0]?.message ?? '',
      /podCIDR 10\.244\.1\.0\/24 of node n2 overlaps podCIDR 10\.244\.0\.0\/23 of node n1/,
    );
  });

  it('no-node: live pods bound to a node without Node object are a note', () => {
    const p = plan({ nodes: [], pods: [pod('a', 'ghost', ['10.244.1.2'])] });
    assert.deepEqual(kinds(p), []);
    assert.deepEqual(
      p.notes.map((n) => `${n.kind} ${n.node}`),
      ['no-node ghost'],
    );
  });

  it('conflicts are ordered by kind, then node; each node counts its own', () => {
    const p = plan({
      nodes: [node('n2', ['10.244.2.0/24']), node('n1', ['10.244.1.0/24', 'fd00::/64'])],
      pods: [pod('x', 'n2', ['10.9.9.9'])],
      pools: [],
    });
    assert.deepEqual(
      p.conflicts.map((c) => `${c.kind} ${c.node}`),
      ['ipv6-podcidr n1', 'no-pool n1', 'no-pool n2', 'outside-podcidr n2'],
    );
    assert.deepEqual(
      p.nodes.map((n) => `${n.node} ${n.conflicts}`),
      ['n1 2', 'n2 2'],
    );
  });
});
