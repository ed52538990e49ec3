// Whether adoption mode may be switched off, on plain objects: ready when every node with a podCIDR
// in a podCIDR pool is opted in and every live pod address in such a pool is allocated (any
// handle); each blocker kind (a node not opted in, an address not recorded on an adopted node, on
// a node not adopted, on a node with no Node object); no podCIDR pool; the pods and nodes that do
// not count (host-network, Succeeded, Failed, outside every podCIDR pool, another pool's podCIDR).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  allocateOrdinal,
  finalizeBlockers,
  isReadyToFinalize,
  mustParseCidr,
  newBlock,
} from 'blockipam/core';
import type { FinalizeInput, IPAMBlock, IPPool, Pod, PodCIDRNode } from 'blockipam/core';
import { pool } from './fixtures.ts';

const node = (name: string, podCIDR: string, adopted = true): PodCIDRNode => ({
  metadata: { name, labels: adopted ? { 'blockipam.io/adopt': 'true' } : {} },
  spec: { podCIDR, podCIDRs: [podCIDR] },
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

const kind: IPPool = pool('kind', { cidr: '10.244.0.0/16', blockSize: 24, podCIDRBlocks: true });
const plain: IPPool = pool('plain', { cidr: '10.96.0.0/16', blockSize: 26 });

/** A /24 block of pool kind affine to `affinity`, holding `ordinals` (any handle). */
function block(cidr: string, affinity: string, ordinals: number[]): IPAMBlock {
  let b = newBlock({ cidr: mustParseCidr(cidr), pool: 'kind', node: affinity, nowMs: 1000 });
  for (const ordinal of ordinals)
    b = allocateOrdinal(
      b,
      ordinal,
      { handle: `other.${ordinal}.eth0`, namespace: 'ns', pod: `p${ordinal}`, podUID: 'x', node: affinity },
      2000,
    )!.block;
  return b;
}

/** Two adopted nodes, each pod's address recorded. */
function adopted(): FinalizeInput {
  return {
    nodes: [node('n1', '10.244.1.0/24'), node('n2', '10.244.2.0/24')],
    pods: [pod('a', 'n1', ['10.244.1.2']), pod('b', 'n2', ['10.244.2.7'])],
    pools: [kind, plain],
    blocks: [block('10.244.1.0/24', 'n1', [2]), block('10.244.2.0/24', 'n2', [7])],
  };
}

describe('finalizeBlockers', () => {
  it('ready: every node opted in, every pod address allocated (whatever the handle)', () => {
    const b = finalizeBlockers(adopted());
    assert.deepEqual(b, { podCIDRPools: ['kind'], nodes: 2, addresses: 2, notAdopted: [], unrecorded: [] });
    assert.equal(isReadyToFinalize(b), true);
  });

  it('a node with a podCIDR in a podCIDR pool, not opted in, blocks (any label value but "true")', () => {
    const input = adopted();
    const b = finalizeBlockers({
      ...input,
      nodes: [
        ...input.nodes,
        node('n3', '10.244.3.0/24', false),
        {
          metadata: { name: 'n4', labels: { 'blockipam.io/adopt': 'yes' } },
          spec: { podCIDR: '10.244.4.0/24' },
        },
      ],
    });
    assert.deepEqual(b.notAdopted, [
      {
        node: 'n3',
        podCIDRs: ['10.244.3.0/24'],
        pools: ['kind'],
        fix: 'kubectl label node n3 blockipam.io/adopt=true',
      },
      {
        node: 'n4',
        podCIDRs: ['10.244.4.0/24'],
        pools: ['kind'],
        fix: 'kubectl label node n4 blockipam.io/adopt=true',
      },
    ]);
    assert.deepEqual(b.unrecorded, []);
    assert.equal(b.nodes, 4);
    assert.equal(isReadyToFinalize(b), false);
  });

  it('nodes outside every podCIDR pool, or without podCIDR, do not block', () => {
    const input = adopted();
    const b = finalizeBlockers({
      ...input,
      nodes: [
        ...input.nodes,
        node('other', '10.96.1.0/24', false),
        node('far', '192.168.0.0/24', false),
        { metadata: { name: 'bare' } },
      ],
    });
    assert.deepEqual(b.notAdopted, []);
    assert.equal(isReadyToFinalize(b), true);
  });

  it("a pod address no block allocates blocks, per node, with its node's state and next step", () => {
    const input = adopted();
    const b = finalizeBlockers({
      ...input,
      nodes: [...input.nodes, node('n3', '10.244.3.0/24', false)],
      pods: [
        ...input.pods,
        pod('c', 'n1', ['10.244.1.9']),
        pod('d', 'n1', ['10.244.1.4']),
        // the ordinal is free, though a block covers it: not recorded
        pod('e', 'n2', ['10.244.2.8']),
        pod('f', 'n3', ['10.244.3.2']),
        pod('g', 'gone', ['10.244.5.2']),
      ],
    });
    assert.deepEqual(
      b.unrecorded.map((u) => [
        u.node,
        u.state,
        u.addresses.map((a) => `${a.address} ${a.namespace}/${a.pod}`),
      ]),
      [
        ['gone', 'no-node', ['10.244.5.2 ns/g']],
        ['n1', 'adopted', ['10.244.1.4 ns/d', '10.244.1.9 ns/c']],
        ['n2', 'adopted', ['10.244.2.8 ns/e']],
        ['n3', 'not-adopted', ['10.244.3.2 ns/f']],
      ],
    );
    assert.match(b.unrecorded[1]?.fix ?? '', /blockipam_agent_host_local_files\{node="n1",state="pending"\}/);
    assert.match(b.unrecorded[3]?.fix ?? '', /^kubectl label node n3 blockipam\.io\/adopt=true/);
    assert.match(b.unrecorded[0]?.fix ?? '', /node gone has no Node object/);
    assert.deepEqual(
      b.notAdopted.map((n) => n.node),
      ['n3'],
    );
    assert.equal(b.addresses, 7);
    assert.equal(isReadyToFinalize(b), false);
  });

  it('host-network, Succeeded and Failed pods, and addresses outside podCIDR pools, are ignored', () => {
    const input = adopted();
    const b = finalizeBlockers({
      ...input,
      pods: [
        ...input.pods,
        pod('host', 'n1', ['10.244.1.50'], { hostNetwork: true }),
        pod('done', 'n1', ['10.244.1.51'], { phase: 'Succeeded' }),
        pod('failed', 'n2', ['10.244.2.51'], { phase: 'Failed' }),
        pod('plain', 'n1', ['10.96.0.5']),
        pod('v6', 'n1', ['fd00::5']),
        pod('unscheduled', '', ['10.244.1.52']),
      ],
    });
    assert.deepEqual(b.unrecorded, []);
    assert.equal(b.addresses, 2);
    assert.equal(isReadyToFinalize(b), true);
  });

  it('a terminating pod still counts: its address may still be in use', () => {
    const input = adopted();
    const terminating = pod('t', 'n1', ['10.244.1.60']);
    const b = finalizeBlockers({
      ...input,
      pods: [
        ...input.pods,
        { ...terminating, metadata: { ...terminating.metadata, deletionTimestamp: '2026-11-29T08:00:00Z' } },
      ],
    });
    assert.deepEqual(
      b.unrecorded.map((u) => u.addresses.map((a) => a.address)),
      [['10.244.1.60']],
    );
  });

  it('no podCIDR pool: not ready, nothing adopted', () => {
    const b = finalizeBlockers({ ...adopted(), pools: [plain], blocks: [] });
    assert.deepEqual(b, { podCIDRPools: [], nodes: 0, addresses: 0, notAdopted: [], unrecorded: [] });
    assert.equal(isReadyToFinalize(b), false);
  });

  it('an unparsable block CIDR or allocation key is skipped, never thrown on', () => {
    const good = block('10.244.1.0/24', 'n1', [2]);
    const bad: IPAMBlock = { ...good, spec: { ...good.spec, cidr: 'nonsense' } };
    const odd = block('10.244.2.0/24', 'n2', []);
    const oddKeys: IPAMBlock = {
      ...odd,
      spec: {
        ...odd.spec,
        allocations: { x: good.spec.allocations['2']!, '999': good.spec.allocations['2']! },
      },
    };
    const b = finalizeBlockers({ ...adopted(), blocks: [bad, oddKeys] });
    assert.deepEqual(
      b.unrecorded.map((u) => u.node),
      ['n1', 'n2'],
    );
  });
});
