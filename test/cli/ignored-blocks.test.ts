// The audit's block findings (cli/audit/block-checks.ts) for the attack shapes of issue 23, D1:
// each block core's classifyBlocks does not trust is one `ignored-block` finding with core's
// reason and message, and no other block check repeats the trust rules.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { nodeLabel, POOL_LABEL } from 'blockipam/core';
import type { IPPool } from 'blockipam/core';
import {
  duplicateAddresses,
  ignoredBlockProblems,
  invariantProblems,
  poolOverlapProblems,
} from '../../cli/audit/block-checks.ts';
import type { Snapshot } from '../../cli/audit/snapshot.ts';
import { LATE, MAIN, shapedBlock, SHAPES_T0 as T0, VICTIM } from '../core/block-shapes.ts';
import type { BlockShape as Shape } from '../core/block-shapes.ts';

function snapshot(blocks: Shape[], pools: IPPool[]): Snapshot {
  return {
    blocks: blocks.map(shapedBlock),
    pools,
    reservations: [],
    config: undefined,
    nodes: new Set(['node-1', 'node-2']),
    nodeAdoption: new Map(),
    pods: [],
    resourceVersions: {},
    startedAtMs: T0,
  };
}

const LATER = '2026-12-02T00:00:00Z';
const IGNORED = 'is ignored by every agent and the allocator';

describe('ignored-block: the blocks the data path ignores, with core’s reason', () => {
  // Each case: blocks, pools, the ignored-block findings (message, objects), and the kinds every
  // block check reports together.
  const cases: {
    name: string;
    blocks: Shape[];
    pools?: IPPool[];
    want: [string, string[]][];
    kinds: string[];
  }[] = [
    {
      // blocks as the allocator writes them, one holding an address borrowed by node-2
      name: 'well-formed blocks: nothing',
      blocks: [VICTIM, { cidr: '10.244.1.0/26', node: 'node-1', allocations: { 3: 'node-2' } }],
      want: [],
      kinds: [],
    },
    {
      // D1: node-1 creates an unowned /28 inside node-2's /26 holding 10.244.88.198 for itself
      name: "unowned /28 inside another node's /26",
      blocks: [
        VICTIM,
        { cidr: '10.244.88.192/28', node: null, allocations: { 6: 'node-1' }, created: LATER },
      ],
      want: [
        [
          `IPAMBlock 10-244-88-192-28 ${IGNORED}: size-mismatch: 10.244.88.192/28 is a /28 but IPPool main has blockSize 26`,
          ['IPAMBlock/10-244-88-192-28'],
        ],
      ],
      kinds: ['duplicate-address', 'ignored-block'],
    },
    {
      // D1: a /27 affine to node-1 over the first half of node-2's /26
      name: "/27 affine to node-1 over node-2's /26",
      blocks: [
        VICTIM,
        { cidr: '10.244.88.192/27', node: 'node-1', allocations: { 2: 'node-1' }, created: LATER },
      ],
      want: [
        [
          `IPAMBlock 10-244-88-192-27 ${IGNORED}: size-mismatch: 10.244.88.192/27 is a /27 but IPPool main has blockSize 26`,
          ['IPAMBlock/10-244-88-192-27'],
        ],
      ],
      kinds: ['ignored-block'],
    },
    {
      // D1's DoS: labels say "affine to node-2" on node-1's block (core's invariant check says so too)
      name: 'a block labelled affine to another node',
      blocks: [
        {
          cidr: '10.244.5.0/26',
          node: 'node-1',
          allocations: { 2: 'node-1' },
          labels: { [nodeLabel('node-2')]: 'affine' },
        },
      ],
      want: [
        [
          `IPAMBlock 10-244-5-0-26 ${IGNORED}: labels-mismatch: stale label ${nodeLabel('node-2')}: no allocation of that node here and not its affinity`,
          ['IPAMBlock/10-244-5-0-26'],
        ],
      ],
      kinds: ['ignored-block', 'invalid-block'],
    },
    {
      // a block over the nodes' own network, no pool holds it
      name: 'a block outside every pool',
      blocks: [{ cidr: '10.99.0.0/26', allocations: { 4: 'node-2' } }],
      want: [
        [
          `IPAMBlock 10-99-0-0-26 ${IGNORED}: outside-pools: 10.99.0.0/26 lies outside every IPPool`,
          ['IPAMBlock/10-99-0-0-26'],
        ],
      ],
      kinds: ['ignored-block'],
    },
    {
      // inside `main`, but its pool label names `late`, which does not hold 10.244.5.0/26
      name: 'a pool-label mismatch',
      pools: [MAIN, LATE],
      blocks: [{ cidr: '10.244.5.0/26', pool: 'late', allocations: { 4: 'node-2' } }],
      want: [
        [
          `IPAMBlock 10-244-5-0-26 ${IGNORED}: pool-mismatch: its pool label "late" names no IPPool containing 10.244.5.0/26`,
          ['IPAMBlock/10-244-5-0-26'],
        ],
      ],
      kinds: ['ignored-block', 'overlapping-pools'],
    },
    {
      // the /28 is of `late`'s size, so only rule 6 judges it: the older /26 is kept, and named
      name: 'overlap through an overlapping pool: the finding names the block kept',
      pools: [MAIN, LATE],
      blocks: [
        VICTIM,
        {
          cidr: '10.244.88.192/28',
          pool: 'late',
          node: 'node-1',
          allocations: { 6: 'node-1' },
          created: LATER,
        },
      ],
      want: [
        [
          `IPAMBlock 10-244-88-192-28 ${IGNORED}: overlap: 10.244.88.192/28 overlaps the older IPAMBlock 10-244-88-192-26 (10.244.88.192/26); the data path keeps IPAMBlock 10-244-88-192-26`,
          ['IPAMBlock/10-244-88-192-28', 'IPAMBlock/10-244-88-192-26'],
        ],
      ],
      kinds: ['duplicate-address', 'ignored-block', 'overlapping-pools'],
    },
    {
      // a wide block losing on size is not also reported for overlapping the blocks under it
      name: 'a /24 of pool main over two /26s: one finding, size-mismatch',
      blocks: [
        VICTIM,
        { cidr: '10.244.88.0/26', node: 'node-1', allocations: { 2: 'node-1' } },
        { cidr: '10.244.88.0/24', node: 'node-1', allocations: { 200: 'node-1' }, created: LATER },
      ],
      want: [
        [
          `IPAMBlock 10-244-88-0-24 ${IGNORED}: size-mismatch: 10.244.88.0/24 is a /24 but IPPool main has blockSize 26`,
          ['IPAMBlock/10-244-88-0-24'],
        ],
      ],
      kinds: ['ignored-block'],
    },
  ];
  for (const { name, blocks, pools = [MAIN], want, kinds } of cases) {
    test(name, () => {
      const seen = snapshot(blocks, pools);
      const got = ignoredBlockProblems(seen);
      assert.deepEqual(
        got.map((p) => [p.message, p.objects]),
        want,
      );
      for (const p of got) assert.equal(p.severity, 'problem');
      const all = [
        ...duplicateAddresses(seen.blocks),
        ...ignoredBlockProblems(seen),
        ...poolOverlapProblems(seen),
        ...invariantProblems(seen),
      ];
      assert.deepEqual([...new Set(all.map((p) => p.kind))].sort(), kinds);
    });
  }

  test('a block without a pool label is pool-mismatch, named after core', () => {
    // the label removed by hand: core's invariant check and the trust rule both see it
    const seen = snapshot([{ cidr: '10.244.3.0/26', allocations: { 2: 'node-2' } }], [MAIN]);
    delete seen.blocks[0]!.metadata.labels![POOL_LABEL];
    assert.match(ignoredBlockProblems(seen)[0]?.message ?? '', /: pool-mismatch: its pool label "/);
  });
});
