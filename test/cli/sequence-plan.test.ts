// What ipamctl repair sequence writes (cli/repair/sequence-plan.ts): every unsafe sequence of a
// block replaced by a fresh one from core's repairedSequence, sequences unique and none above the
// block's, nothing planned for a block whose sequences are safe.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkBlockInvariants, isSafeSequence, SEQUENCE_MAX } from 'blockipam/core';
import type { IPAMBlock } from 'blockipam/core';
import { planSequenceRepair } from '../../cli/repair/sequence-plan.ts';
import { shapedBlock, SHAPES_T0 } from '../core/block-shapes.ts';

const NOW = SHAPES_T0 + 3_600_000;

/** node-2's block holding ordinals 6 (sequence T0 + 1) and 9 (T0 + 2), changed by `edit`. */
function block(edit: (b: IPAMBlock) => void): IPAMBlock {
  const b = shapedBlock({ cidr: '10.244.88.192/26', allocations: { 6: 'node-2', 9: 'node-2' } });
  edit(b);
  return b;
}

describe('planSequenceRepair', () => {
  // Each case: the block, then the changes planned as [ordinal or 'spec', from, to].
  const cases: [string, IPAMBlock, [number | 'spec', number, number][]][] = [
    [
      // 2^53 + 1 as JSON reads as 2^53; the clock is above every allocation
      'spec.sequence 2^53: lowered to the clock + 1',
      block((b) => (b.spec.sequence = 2 ** 53)),
      [['spec', 2 ** 53, NOW + 1]],
    ],
    [
      'spec.sequence not an integer: replaced',
      block((b) => (b.spec.sequence = 1.5)),
      [['spec', 1.5, NOW + 1]],
    ],
    [
      // fresh values above the clock, the block's sequence the last of them
      'allocations above 2^52 too: fresh values by ordinal',
      block((b) => {
        b.spec.sequence = SEQUENCE_MAX;
        b.spec.allocations[6]!.sequence = SEQUENCE_MAX;
        b.spec.allocations[9]!.sequence = 2 ** 52 + 1;
      }),
      [
        ['spec', SEQUENCE_MAX, NOW + 2],
        [6, SEQUENCE_MAX, NOW + 1],
        [9, 2 ** 52 + 1, NOW + 2],
      ],
    ],
    [
      // a safe block sequence never decreases (the CRD refuses it): fresh values start above it
      'an allocation above 2^52 under a safe spec.sequence ahead of the clock',
      block((b) => {
        b.spec.sequence = NOW + 50;
        b.spec.allocations[9]!.sequence = 2 ** 53;
      }),
      [
        ['spec', NOW + 50, NOW + 51],
        [9, 2 ** 53, NOW + 51],
      ],
    ],
    [
      // repairedSequence is above every safe allocation, the clock being behind them
      'a safe allocation ahead of the clock: above it',
      block((b) => {
        b.spec.sequence = 2 ** 53;
        b.spec.allocations[6]!.sequence = NOW + 7;
      }),
      [['spec', 2 ** 53, NOW + 8]],
    ],
  ];
  for (const [name, input, want] of cases)
    test(name, () => {
      const plan = planSequenceRepair(input, NOW);
      assert.ok(plan);
      assert.deepEqual(
        plan.changes.map((c) => [c.ordinal ?? 'spec', c.from, c.to]),
        want,
      );
      const { spec, metadata } = plan.repaired;
      assert.equal(metadata, input.metadata, 'metadata (resourceVersion) as read');
      assert.ok(isSafeSequence(spec.sequence));
      for (const a of Object.values(spec.allocations)) assert.ok(isSafeSequence(a.sequence));
      assert.deepEqual(
        checkBlockInvariants(plan.repaired, { nowMs: NOW }),
        [],
        'unique, none above the block',
      );
      assert.ok(plan.unsafe.length > 0);
    });

  test('a block whose sequences are all safe: nothing planned', () => {
    assert.equal(
      planSequenceRepair(
        block(() => undefined),
        NOW,
      ),
      undefined,
    );
  });

  test('exactly 2^52 is safe; one above is not', () => {
    assert.equal(
      planSequenceRepair(
        block((b) => (b.spec.sequence = 2 ** 52)),
        NOW,
      ),
      undefined,
    );
    assert.ok(
      planSequenceRepair(
        block((b) => (b.spec.sequence = 2 ** 52 + 1)),
        NOW,
      ),
    );
  });
});
