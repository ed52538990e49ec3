// core's pool conditions rule: thresholds at their edges (89 / 90 / 100 %, exact integer
// comparison, a custom threshold), no unclaimed block, a pool that is not allocatable
// (disabled, terminating, shadowed), the state; setConditions keeps lastTransitionTime across
// a status that did not change and moves it on a transition.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { becameTrue, poolConditions, setConditions } from 'blockipam/core';
import type { Condition, PoolConditionInput } from 'blockipam/core';
import { pool } from './fixtures.ts';

const P = pool('p', { cidr: '10.0.0.0/24' });

/** The rule over capacity / free / unclaimed blocks, threshold 90 unless given. */
function judge(
  figures: { capacity: bigint; free: bigint; unclaimedBlocks?: bigint },
  options: Partial<PoolConditionInput> = {},
) {
  return poolConditions({
    pool: P,
    usage: { unclaimedBlocks: 3n, freeInClaimedBlocks: 7n, ...figures },
    nearlyExhaustedPercent: 90,
    ...options,
  });
}

/** type → [status, reason] */
const table = (v: ReturnType<typeof judge>): Record<string, [string, string | undefined]> =>
  Object.fromEntries(v.conditions.map((c) => [c.type, [c.status, c.reason]]));

void describe('poolConditions', () => {
  // [name, verdict, state, the conditions in order Ready | Allocatable | NearlyExhausted | Exhausted |
  // Disabled, each as `status reason`]
  const cases: [string, ReturnType<typeof judge>, string, string][] = [
    // 89 % used: below the default threshold
    [
      '89 %',
      judge({ capacity: 100n, free: 11n }),
      'Ready',
      'True OK | True OK | False BelowThreshold | False FreeAddresses | False Enabled',
    ],
    // exactly 90 %: at the threshold counts
    [
      '90 %',
      judge({ capacity: 100n, free: 10n }),
      'NearlyExhausted',
      'True OK | True OK | True AboveThreshold | False FreeAddresses | False Enabled',
    ],
    // 100 %: exhausted, and nearly exhausted too; not ready
    [
      '100 %',
      judge({ capacity: 100n, free: 0n }),
      'Exhausted',
      'False Exhausted | True OK | True AboveThreshold | True NoFreeAddresses | False Enabled',
    ],
    // 50 % used but every block claimed: nearly exhausted for a node needing a block
    [
      'no unclaimed block',
      judge({ capacity: 100n, free: 50n, unclaimedBlocks: 0n }),
      'NearlyExhausted',
      'True OK | True OK | True NoUnclaimedBlocks | False FreeAddresses | False Enabled',
    ],
    // a disabled, full pool: not judged (no alert on a pool nothing is allocated from)
    [
      'disabled',
      judge({ capacity: 100n, free: 0n }, { pool: pool('p', { cidr: '10.0.0.0/24', disabled: true }) }),
      'Disabled',
      'False PoolDisabled | False PoolDisabled | False PoolDisabled | False PoolDisabled | True PoolDisabled',
    ],
    // being deleted wins over disabled
    [
      'terminating',
      judge(
        { capacity: 100n, free: 0n },
        {
          pool: {
            ...pool('p', { cidr: '10.0.0.0/24', disabled: true }),
            metadata: { name: 'p', deletionTimestamp: '2026-12-03T00:00:00Z' },
          },
        },
      ),
      'Terminating',
      'False Terminating | False Terminating | False Terminating | False Terminating | True PoolDisabled',
    ],
    // overlapping an older pool
    [
      'shadowed',
      judge({ capacity: 100n, free: 100n }, { shadowedBy: 'older' }),
      'CIDROverlap',
      'False CIDROverlap | False CIDROverlap | False CIDROverlap | False CIDROverlap | False Enabled',
    ],
    // a pool wholly reserved: capacity left 0 is exhausted
    [
      'nothing assignable',
      judge({ capacity: 0n, free: 0n }),
      'Exhausted',
      'False Exhausted | True OK | True AboveThreshold | True NoFreeAddresses | False Enabled',
    ],
  ];
  for (const [name, verdict, state, expected] of cases)
    void it(name, () => {
      assert.equal(verdict.state, state);
      assert.deepEqual(
        verdict.conditions.map((c) => c.type),
        ['Ready', 'Allocatable', 'NearlyExhausted', 'Exhausted', 'Disabled'],
      );
      assert.equal(verdict.conditions.map((c) => `${c.status} ${c.reason}`).join(' | '), expected);
    });

  void it('compares exactly, not on a rounded percentage', () => {
    // a /16 of /26 blocks: 62 464 assignable; 90 % is 56 217.6 addresses
    const at = (used: bigint) => table(judge({ capacity: 62_464n, free: 62_464n - used }))['NearlyExhausted'];
    assert.deepEqual(at(56_217n), ['False', 'BelowThreshold']);
    assert.deepEqual(at(56_218n), ['True', 'AboveThreshold']);
  });

  void it('takes the threshold from the input (poolNearlyExhaustedPercent)', () => {
    const at = (free: bigint, percent: number) =>
      table(judge({ capacity: 100n, free }, { nearlyExhaustedPercent: percent }))['NearlyExhausted']?.[0];
    assert.equal(at(1n, 100), 'False'); // 99 % of 100 %
    assert.equal(at(0n, 100), 'True');
    assert.equal(at(50n, 50), 'True');
    assert.equal(at(51n, 50), 'False');
  });

  void it('names the figures and the threshold in its messages', () => {
    const nearly = judge({ capacity: 100n, free: 10n }).conditions.find((c) => c.type === 'NearlyExhausted');
    assert.match(nearly?.message ?? '', /90 of 100 addresses allocated or reserved \(90%\)/);
    assert.match(nearly?.message ?? '', /poolNearlyExhaustedPercent/);
    const blocks = judge({ capacity: 100n, free: 50n, unclaimedBlocks: 0n }).conditions.find(
      (c) => c.type === 'NearlyExhausted',
    );
    assert.match(blocks?.message ?? '', /every block of the pool is claimed: 7 free addresses remain/);
  });
});

void describe('setConditions', () => {
  const T1 = '2026-12-03T10:00:00Z';
  const T2 = '2026-12-03T11:00:00Z';
  const T3 = '2026-12-03T12:00:00Z';
  const types = (cs: Condition[]) =>
    Object.fromEntries(cs.map((c) => [c.type, [c.status, c.lastTransitionTime]]));

  void it('keeps lastTransitionTime while the status holds, moves it on a transition', () => {
    // Ready → NearlyExhausted (T2) → NearlyExhausted with other figures (T3) → Exhausted (T3)
    const c1 = setConditions(undefined, judge({ capacity: 100n, free: 50n }).conditions, T1, 1);
    const c2 = setConditions(c1, judge({ capacity: 100n, free: 10n }).conditions, T2, 1);
    const c3 = setConditions(c2, judge({ capacity: 100n, free: 5n }).conditions, T3, 2);
    assert.deepEqual(types(c2), {
      Ready: ['True', T1],
      Allocatable: ['True', T1],
      NearlyExhausted: ['True', T2],
      Exhausted: ['False', T1],
      Disabled: ['False', T1],
    });
    // the message changed (5 free), the status did not: T2 stays
    assert.deepEqual(types(c3)['NearlyExhausted'], ['True', T2]);
    assert.notEqual(c3.find((c) => c.type === 'NearlyExhausted')?.message, c2[2]?.message);
    assert.ok(c3.every((c) => c.observedGeneration === 2));
    const c4 = setConditions(c3, judge({ capacity: 100n, free: 0n }).conditions, T3, 2);
    assert.deepEqual(types(c4)['Exhausted'], ['True', T3]);
    assert.deepEqual(types(c4)['Ready'], ['False', T3]);
    assert.deepEqual(becameTrue(c3, c4), ['Exhausted']);
    assert.deepEqual(becameTrue(c1, c2), ['NearlyExhausted']);
    assert.deepEqual(becameTrue(c4, c4), []);
  });

  void it('keeps conditions of other types first, untouched; no observedGeneration when unknown', () => {
    const foreign: Condition = { type: 'Other', status: 'True', lastTransitionTime: T1 };
    const next = setConditions([foreign], [{ type: 'Ready', status: 'True', reason: 'OK' }], T2);
    assert.deepEqual(next, [
      foreign,
      { type: 'Ready', status: 'True', reason: 'OK', lastTransitionTime: T2 },
    ]);
  });
});
