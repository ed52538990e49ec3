// core's pool figures beyond used/free — unclaimed block-sized ranges (claimed blocks of any
// size and wholly reserved ranges taken out), free addresses inside claimed blocks vs the rest,
// borrowed allocations — and nodeHeadroom: per existing node and eligible pool, its free
// addresses and whether it is short (below the watermark with no way to claim), with reason.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  allocateOrdinal,
  DEFAULT_SETTINGS,
  mustParseCidr,
  newBlock,
  nodeHeadroom,
  requestedManualPools,
  poolUtilization,
} from 'blockipam/core';
import type { HeadroomNode, IPAMBlock } from 'blockipam/core';
import { pool, T0 } from './fixtures.ts';

/** A block of `poolName` affine to `node` with `ordinals` allocated to `holders` (default: the affine node). */
function block(
  cidr: string,
  poolName: string,
  node: string | null,
  ordinals: number[],
  holder?: string,
): IPAMBlock {
  let b = newBlock({ cidr: mustParseCidr(cidr), pool: poolName, node, nowMs: T0 });
  for (const ordinal of ordinals) {
    const got = allocateOrdinal(
      b,
      ordinal,
      { handle: `net.${cidr}.${ordinal}`, node: holder ?? node ?? 'x' },
      T0,
    );
    b = got?.block ?? assert.fail(`ordinal ${ordinal}`);
  }
  return b;
}

const cidrs = (...texts: string[]) => texts.map(mustParseCidr);

void describe('poolUtilization: fragmentation figures', () => {
  // 10.0.0.0/24 in /26 blocks: 4 ranges × 61 assignable = 244
  const P = pool('p', { cidr: '10.0.0.0/24', blockSize: 26 });

  void it('claimed, wholly reserved and partly reserved ranges', () => {
    const blocks = [block('10.0.0.0/26', 'p', 'n1', [2, 3])];
    // .192/26 wholly reserved (not claimable); .64/28 partly (still claimable); .16/30 inside the claimed block
    const u = poolUtilization(P, blocks, cidrs('10.0.0.192/26', '10.0.0.64/28', '10.0.0.16/30'));
    assert.deepEqual(
      { ...u },
      {
        blockSize: 26,
        capacity: 244n,
        allocated: 2n,
        reserved: 84n,
        free: 158n,
        blocks: 1,
        unclaimedBlocks: 2n,
        freeInClaimedBlocks: 55n, // 61 − 2 allocated − 4 reserved
        freeInUnclaimedBlocks: 103n,
        borrowed: 0n,
      },
    );
  });

  void it('a block of another size takes its range; borrowed allocations counted', () => {
    const blocks = [block('10.0.0.0/26', 'p', 'n1', [2, 3], 'n2'), block('10.0.0.128/28', 'p', null, [4])];
    const u = poolUtilization(P, blocks, []);
    assert.equal(u.unclaimedBlocks, 2n);
    assert.equal(u.borrowed, 3n); // two for n2 in n1's block, one in an unowned block
    assert.equal(u.freeInClaimedBlocks, 59n + 12n);
    assert.equal(u.freeInUnclaimedBlocks, 244n - 3n - 71n);
  });

  void it('every range claimed: no unclaimed block, free only inside blocks', () => {
    const blocks = ['10.0.0.0/26', '10.0.0.64/26', '10.0.0.128/26', '10.0.0.192/26'].map((c) =>
      block(c, 'p', 'n1', [2]),
    );
    const u = poolUtilization(P, blocks, []);
    assert.equal(u.unclaimedBlocks, 0n);
    assert.equal(u.freeInUnclaimedBlocks, 0n);
    assert.equal(u.freeInClaimedBlocks, u.free);
  });

  void it('an IPv6 /48 of /122 blocks counts 2^74 ranges exactly', () => {
    const v6 = pool('v6', { cidr: 'fd00:1::/48', blockSize: 122 });
    const u = poolUtilization(v6, [block('fd00:1::/122', 'v6', 'n1', [])], []);
    assert.equal(u.unclaimedBlocks, 2n ** 74n - 1n);
    assert.equal(u.freeInClaimedBlocks, 62n);
  });
});

void describe('nodeHeadroom', () => {
  const A = pool('a', { cidr: '10.1.0.0/24', blockSize: 26 });
  const B = pool('b', { cidr: '10.2.0.0/24', blockSize: 26, nodeSelector: { matchLabels: { zone: 'b' } } });
  const M = pool('m', { cidr: '10.3.0.0/24', blockSize: 26, assignmentMode: 'Manual' });
  const nodes: HeadroomNode[] = [
    { metadata: { name: 'n2', labels: { zone: 'b' } } },
    { metadata: { name: 'n1', labels: {} } },
  ];
  const settings = { ...DEFAULT_SETTINGS, minFreeAddressesPerNode: 16 };
  const blocks = [
    block(
      '10.1.0.0/26',
      'a',
      'n1',
      Array.from({ length: 50 }, (_, i) => i + 2),
    ), // 11 free
    block('10.2.0.0/26', 'b', 'n2', []), // 61 free
    block('10.1.0.64/26', 'a', 'gone', []), // a node that does not exist: not reported
  ];
  const run = (over: Partial<typeof settings>, unclaimed: bigint) =>
    nodeHeadroom({
      pools: [A, B, M],
      nodes,
      blocks,
      settings: { ...settings, ...over },
      unclaimedBlocks: new Map([
        ['a', unclaimed],
        ['b', unclaimed],
      ]),
    }).map((h) => [h.pool, h.node, h.free, h.blocks, h.short ?? '-', h.cannotClaim ?? '-'].join(' '));

  // [pool, node, free, blocks, short, cannotClaim] per row, `-` for none: short = below the watermark
  // and cannot claim
  const cases: [string, Partial<typeof settings>, bigint, string[]][] = [
    // n1 below the watermark but able to claim: not short; Manual pool and unmatched selector skipped
    ['can claim', {}, 5n, ['a n1 11 1 - -', 'a n2 0 0 - -', 'b n2 61 1 - -']],
    // no unclaimed block: both nodes below the watermark in a are short; n2 in b cannot claim either
    [
      'no unclaimed block',
      {},
      0n,
      [
        'a n1 11 1 NoUnclaimedBlocks NoUnclaimedBlocks',
        'a n2 0 0 NoUnclaimedBlocks NoUnclaimedBlocks',
        'b n2 61 1 - NoUnclaimedBlocks',
      ],
    ],
    // one block per node and family: n1 and n2 hold theirs
    [
      'maxBlocksPerNode',
      { maxBlocksPerNode: 1 },
      5n,
      [
        'a n1 11 1 MaxBlocksPerNode MaxBlocksPerNode',
        'a n2 0 0 MaxBlocksPerNode MaxBlocksPerNode',
        'b n2 61 1 - MaxBlocksPerNode',
      ],
    ],
    [
      'autoAllocateBlocks false',
      { autoAllocateBlocks: false, strictAffinity: true },
      5n,
      [
        'a n1 11 1 AutoAllocateOff AutoAllocateOff',
        'a n2 0 0 AutoAllocateOff AutoAllocateOff',
        'b n2 61 1 - AutoAllocateOff',
      ],
    ],
    // watermark 0 (pre-claim off): short only without a free address
    [
      'watermark 0',
      { minFreeAddressesPerNode: 0 },
      0n,
      [
        'a n1 11 1 - NoUnclaimedBlocks',
        'a n2 0 0 NoUnclaimedBlocks NoUnclaimedBlocks',
        'b n2 61 1 - NoUnclaimedBlocks',
      ],
    ],
  ];
  for (const [name, over, unclaimed, expected] of cases)
    void it(name, () => assert.deepEqual(run(over, unclaimed), expected));

  // a Manual pool counts only where pending pods request it: n1 here, full (no unclaimed block)
  void it('a Manual pool requested on n1', () =>
    assert.deepEqual(
      nodeHeadroom({
        pools: [M],
        requested: new Map([['n1', new Set(['m'])]]),
        nodes,
        blocks,
        settings,
        unclaimedBlocks: new Map([['m', 0n]]),
      }).map((h) => [h.pool, h.node, h.free, h.short ?? '-']),
      [['m', 'n1', 0, 'NoUnclaimedBlocks']],
    ));
});

void describe('requestedManualPools', () => {
  const M = pool('m', { cidr: '10.3.0.0/24', blockSize: 26, assignmentMode: 'Manual' });
  const A = pool('a', { cidr: '10.1.0.0/24', blockSize: 26 });
  const ANNOTATION = 'ipam.blockipam.io/ippools';
  const pod = (
    node: string | undefined,
    phase: string | undefined,
    annotations?: Record<string, string>,
    namespace = 'plain',
  ) => ({
    metadata: { namespace, ...(annotations ? { annotations } : {}) },
    spec: node ? { nodeName: node } : {},
    status: phase ? { phase } : {},
  });
  const namespaces: Record<string, Record<string, string>> = {
    wants: { [ANNOTATION]: '["m"]' },
    plain: {},
  };
  const cases: [string, ReturnType<typeof pod>[], [string, string[]][]][] = [
    // the pod's own annotation, by name
    ['pod annotation, pending', [pod('n1', 'Pending', { [ANNOTATION]: '["m"]' })], [['n1', ['m']]]],
    // by CIDR
    ['pod annotation by CIDR', [pod('n1', 'Pending', { [ANNOTATION]: '["10.3.0.0/24"]' })], [['n1', ['m']]]],
    // the namespace's default, no phase reported yet
    ['namespace annotation', [pod('n2', undefined, undefined, 'wants')], [['n2', ['m']]]],
    // the pod's list overrides its namespace's
    ['pod overrides namespace', [pod('n1', 'Pending', { [ANNOTATION]: '["a"]' }, 'wants')], []],
    // running pods are no demand; nor unscheduled ones
    ['running', [pod('n1', 'Running', { [ANNOTATION]: '["m"]' })], []],
    ['not scheduled', [pod(undefined, 'Pending', { [ANNOTATION]: '["m"]' })], []],
    // a malformed pod annotation names nothing (its ADD fails saying why), not the namespace's
    ['malformed', [pod('n1', 'Pending', { [ANNOTATION]: 'm' }, 'wants')], []],
    // Automatic pools are never "requested"
    ['an Automatic pool', [pod('n1', 'Pending', { [ANNOTATION]: '["a"]' })], []],
  ];
  for (const [name, pods, expected] of cases)
    void it(name, () =>
      assert.deepEqual(
        [...requestedManualPools(pods, (ns) => namespaces[ns], [A, M])].map(([n, set]) => [n, [...set]]),
        expected,
      ),
    );
});
