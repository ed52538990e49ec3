// The audit's overlap sweep (cli/audit/block-checks.ts, over pools), against brute force with fast-check.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { cidrsOverlap, formatCidr, maskValue } from 'blockipam/core';
import type { Cidr } from 'blockipam/core';
import { overlaps } from '../../cli/audit/block-checks.ts';

const v4 = (prefixLength: number, offset: number): Cidr => ({
  family: 4,
  base: maskValue(0x0af40000n + BigInt(offset), 4, prefixLength),
  prefixLength,
});

describe('overlaps (sweep)', () => {
  // Each case: CIDRs, and the pairs expected.
  const cases: [string, Cidr[], string[]][] = [
    ['disjoint blocks', [v4(26, 0), v4(26, 64)], []],
    ['nested blocks', [v4(26, 0), v4(24, 0)], ['10.244.0.0/24 10.244.0.0/26']],
    [
      'one wide block over two',
      [v4(26, 64), v4(25, 0), v4(26, 0)],
      ['10.244.0.0/25 10.244.0.0/26', '10.244.0.0/25 10.244.0.64/26'],
    ],
    ['families never overlap', [v4(26, 0), { family: 6, base: 0n, prefixLength: 122 }], []],
  ];
  for (const [name, cidrs, want] of cases) {
    test(name, () => {
      const got = overlaps(cidrs.map((cidr, i) => ({ name: `b${i}`, cidr }))).map(
        ([a, b]) => `${formatCidr(a.cidr)} ${formatCidr(b.cidr)}`,
      );
      assert.deepEqual(got.sort(), want.sort());
    });
  }

  test('names every overlapping range, and only true overlaps (property, vs brute force)', () => {
    const cidr = fc
      .record({ prefixLength: fc.integer({ min: 22, max: 28 }), offset: fc.integer({ min: 0, max: 4095 }) })
      .map(({ prefixLength, offset }) => v4(prefixLength, offset));
    fc.assert(
      fc.property(fc.array(cidr, { maxLength: 30 }), (cidrs) => {
        const ranges = cidrs.map((c, i) => ({ name: `b${i}`, cidr: c }));
        const pairs = overlaps(ranges);
        for (const [a, b] of pairs) assert.ok(cidrsOverlap(a.cidr, b.cidr));
        const named = new Set(pairs.flat().map((r) => r.name));
        const brute = ranges
          .filter((r) => ranges.some((o) => o !== r && cidrsOverlap(o.cidr, r.cidr)))
          .map((r) => r.name);
        assert.deepEqual([...named].sort(), brute.sort());
      }),
    );
  });
});
