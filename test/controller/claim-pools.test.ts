// The controller's claimable-pools step with a recording sink: core's list of the watched pools
// is published; nothing is sent by a replica that may not write; a missing ConfigMap, a conflict
// and another API error are outcomes of the pass (logged, counted), never a thrown pass.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConflictError, newStats, NotFoundError } from 'blockipam/core';
import type { IPPool } from 'blockipam/core';
import { claimPoolsStep } from '../../block-controller/controller/admission/claim-pools.ts';
import type { ClaimPoolsSink } from '../../block-controller/controller/admission/claim-pools.ts';
import { EventBudget } from '../../block-controller/controller/pass.ts';
import type { PassContext } from '../../block-controller/controller/pass.ts';
import type { ClusterView } from '../../block-controller/controller/view.ts';
import { memoryLog, TestClock } from './helpers.ts';

const POOLS: IPPool[] = [
  { metadata: { name: 'a', creationTimestamp: '2026-11-01T00:00:00Z' }, spec: { cidr: '10.72.0.0/16' } },
  {
    metadata: { name: 'off', creationTimestamp: '2026-11-01T00:00:00Z' },
    spec: { cidr: '10.73.0.0/16', blockSize: 28, disabled: true },
  },
];

function context(mayWrite: boolean, apiErrors: string[]): PassContext {
  const clock = new TestClock(Date.parse('2026-12-03T09:00:00Z'));
  return {
    ds: undefined as never, // the step writes through its sink only
    view: { pools: () => POOLS } as unknown as ClusterView,
    clock: clock.now,
    log: memoryLog(),
    events: new EventBudget(undefined, 0),
    allocator: { clock: clock.now, stats: newStats() },
    mayWrite: () => mayWrite,
    onApiError: (operation) => apiErrors.push(operation),
  };
}

function sink(answer: () => Promise<'written' | 'unchanged'>): ClaimPoolsSink & { sent: object[] } {
  const sent: object[] = [];
  return {
    target: 'ns/claim-pools',
    sent,
    publish(data) {
      sent.push(data);
      return answer();
    },
  };
}

void describe('controller: claimable pools for the admission policy', () => {
  void it('publishes core’s list of the watched pools', async () => {
    const s = sink(() => Promise.resolve('written'));
    const errors: string[] = [];
    assert.deepEqual(await claimPoolsStep(context(true, errors), s), { outcome: 'written' });
    assert.deepEqual(s.sent, [{ a: '10.72.0.0/16 26 usable', off: '10.73.0.0/16 28 disabled' }]);
    assert.deepEqual(errors, []);
  });

  void it('sends nothing when it may not write (not the leader, shutting down)', async () => {
    const s = sink(() => Promise.resolve('written'));
    assert.deepEqual(await claimPoolsStep(context(false, []), s), { outcome: 'not-leader' });
    assert.deepEqual(s.sent, []);
  });

  void it('a missing ConfigMap, a conflict and other errors are outcomes, not exceptions', async () => {
    const cases: [Error, string, string[]][] = [
      // the chart creates it; without it every claim is refused: warn and count
      [new NotFoundError('configmaps ns/claim-pools', 'not found'), 'missing', ['claim-pools']],
      // a concurrent writer: the next pass reads it again; not an API error
      [new ConflictError('configmaps ns/claim-pools', 'conflict'), 'conflict', []],
      // anything else: warn, count, retry next pass
      [new Error('socket hang up'), 'failed', ['claim-pools']],
    ];
    for (const [error, outcome, counted] of cases) {
      const errors: string[] = [];
      const done = await claimPoolsStep(
        context(true, errors),
        sink(() => Promise.reject(error)),
      );
      assert.deepEqual(done, { outcome }, error.message);
      assert.deepEqual(errors, counted, error.message);
    }
  });
});
