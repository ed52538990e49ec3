/**
 * STATUS's cost and answer (core/node-ipam/status.ts poolStatus) on a cluster of 1,000 blocks over
 * 50 nodes (memory datastore, which counts requests and the objects they return), with the
 * snapshot given as the service gives it: a node with room in its own blocks reads only
 * its own blocks — one LIST selected by its label, never every block of the cluster (runtimes
 * poll STATUS every few seconds per node) — and the claim and borrow paths read more only when
 * the node's blocks are full.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  allocateOrdinal,
  blockOrdinals,
  loadSnapshot,
  MemoryDatastore,
  newBlock,
  type IPAMBlock,
  type IPAMConfigSpec,
} from 'blockipam/core';
import { poolStatus } from 'blockipam/core/node-ipam';

const NODES = 50;
const BLOCKS_PER_NODE = 20;
const nodeName = (i: number): string => `node-${i}`;

/** Block `index` of 10.0.0.0/8 in /26 blocks, affine to `node`, with `used` ordinals allocated. */
function block(index: number, node: string, used: 'one' | 'full'): IPAMBlock {
  const cidr = { family: 4 as const, base: (10n << 24n) + BigInt(index) * 64n, prefixLength: 26 };
  let b = newBlock({ cidr, pool: 'big', node, nowMs: 0 });
  for (let ordinal = 2; ordinal < blockOrdinals(cidr) - 1; ordinal++) {
    const owner = { handle: `n.c${index}-${ordinal}.eth0`, network: 'n', node };
    b = allocateOrdinal(b, ordinal, owner, 0)?.block ?? b;
    if (used === 'one') break;
  }
  return b;
}

/** 1,000 blocks over 50 nodes; node-0's blocks are full, the others' have room. */
function cluster(config: IPAMConfigSpec = {}): MemoryDatastore {
  const blocks: IPAMBlock[] = [];
  for (let n = 0; n < NODES; n++)
    for (let j = 0; j < BLOCKS_PER_NODE; j++)
      blocks.push(block(n * BLOCKS_PER_NODE + j, nodeName(n), n === 0 ? 'full' : 'one'));
  return new MemoryDatastore({
    pools: [
      {
        apiVersion: 'ipam.blockipam.io/v1alpha1',
        kind: 'IPPool',
        metadata: { name: 'big', creationTimestamp: '2026-01-01T00:00:00Z' },
        spec: { cidr: '10.0.0.0/8', blockSize: 26 },
      },
    ],
    configs: [
      {
        apiVersion: 'ipam.blockipam.io/v1alpha1',
        kind: 'IPAMConfig',
        metadata: { name: 'default' },
        spec: config,
      },
    ],
    blocks,
  });
}

/** STATUS for `node` on a snapshot read before: its answer, requests and objects listed. */
async function status(ds: MemoryDatastore, node: string) {
  const snapshot = await loadSnapshot(ds);
  const before = { ...ds.stats };
  const outcome = await poolStatus(ds, { node, families: [4], pools: [], snapshot, nodeLabels: {} });
  return { outcome, requests: ds.stats.reads - before.reads, objects: ds.stats.listed - before.listed };
}

void describe('STATUS on 1,000 blocks over 50 nodes', () => {
  void it('a node with room in its own blocks: one LIST of its own 20 blocks, nothing else', async () => {
    const r = await status(cluster(), nodeName(7));
    assert.deepEqual(r.outcome, { kind: 'ready' });
    assert.equal(r.requests, 1);
    assert.equal(r.objects, BLOCKS_PER_NODE);
  });
  void it('own blocks full, below maxBlocksPerNode: plus a metadata-only LIST of the pool (claim)', async () => {
    const r = await status(cluster({ maxBlocksPerNode: 100 }), nodeName(0));
    assert.deepEqual(r.outcome, { kind: 'ready' });
    assert.equal(r.requests, 2);
  });
  void it('own blocks full at maxBlocksPerNode: room in other nodes’ blocks is available (borrow)', async () => {
    const r = await status(cluster(), nodeName(0));
    assert.deepEqual(r.outcome, { kind: 'ready' });
    assert.equal(r.requests, 2);
  });
  void it('own blocks full at maxBlocksPerNode with strictAffinity: no room (50)', async () => {
    const r = await status(cluster({ strictAffinity: true }), nodeName(0));
    assert.equal(r.outcome.kind, 'notReady');
    assert.match(r.outcome.kind === 'notReady' ? r.outcome.message : '', /no free address for node node-0/);
    assert.equal(r.requests, 1);
  });
  void it('a node without blocks may claim one: available', async () => {
    const r = await status(cluster(), 'node-new');
    assert.deepEqual(r.outcome, { kind: 'ready' });
    assert.equal(r.requests, 2);
    assert.equal(r.objects, 1_000, 'the metadata LIST of the pool (claim check) names every claimed block');
  });
});

void describe('STATUS: which pools count', () => {
  const ds = (): MemoryDatastore =>
    new MemoryDatastore({
      pools: [
        {
          apiVersion: 'ipam.blockipam.io/v1alpha1',
          kind: 'IPPool',
          metadata: { name: 'zoned', creationTimestamp: '2026-01-01T00:00:00Z' },
          spec: { cidr: '10.1.0.0/16', blockSize: 26, nodeSelector: { matchLabels: { zone: 'a' } } },
        },
        {
          apiVersion: 'ipam.blockipam.io/v1alpha1',
          kind: 'IPPool',
          metadata: { name: 'manual', creationTimestamp: '2026-01-02T00:00:00Z' },
          spec: { cidr: '10.2.0.0/16', blockSize: 26, assignmentMode: 'Manual' },
        },
      ],
    });
  const cases: [string, Record<string, string>, string[], string | undefined][] = [
    // the nodeSelector admits the node
    ['zone a, automatic', { zone: 'a' }, [], undefined],
    // it does not: no usable pool (the Manual one is not automatic)
    ['zone b, automatic', { zone: 'b' }, [], 'no usable IPv4 pool for node n1'],
    // a Manual pool named by name counts
    ['zone b, named', { zone: 'b' }, ['manual'], undefined],
    // or by its CIDR
    ['zone b, by CIDR', { zone: 'b' }, ['10.2.0.0/16'], undefined],
  ];
  for (const [name, nodeLabels, pools, notReady] of cases)
    void it(name, async () => {
      const store = ds();
      const snapshot = await loadSnapshot(store);
      const out = await poolStatus(store, { node: 'n1', families: [4], pools, snapshot, nodeLabels });
      assert.deepEqual(
        out,
        notReady === undefined ? { kind: 'ready' } : { kind: 'notReady', message: notReady },
      );
    });
});
