// Release planning (cli/release/plan.ts): the "leaked in every report" rule.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { LeakedAllocation } from '../../cli/audit/problems.ts';
import type { Report } from '../../cli/audit/report.ts';
import { leakedInEveryReport } from '../../cli/release/plan.ts';

describe('leakedInEveryReport', () => {
  const leak = (address: string, sequence: number): LeakedAllocation => ({
    address,
    block: '10-244-0-0-26',
    ordinal: Number(address.split('.').at(-1)),
    handle: `h-${address}`,
    sequence,
    node: 'n1',
    allocatedAt: '',
    reason: 'leaked-pod-deleted',
  });
  const report = (uid: string, leaked: LeakedAllocation[]): { path: string; report: Report } => ({
    path: `${uid}.json`,
    report: { cluster: { kubeSystemUID: uid, server: 's' }, leaked } as Report,
  });

  test('keeps entries present in every report, same block, ordinal, handle and sequence number', () => {
    const got = leakedInEveryReport(
      [
        report('u', [leak('10.244.0.5', 1), leak('10.244.0.6', 2), leak('10.244.0.7', 3)]),
        report('u', [leak('10.244.0.6', 2), leak('10.244.0.7', 9)]),
      ],
      'u',
    );
    // .5 is missing from the second report; .7 has another sequence number there (re-allocated).
    assert.deepEqual(
      got.map((l) => l.address),
      ['10.244.0.6'],
    );
  });

  test('refuses any report of another cluster', () => {
    assert.throws(
      () => leakedInEveryReport([report('u', []), report('other', [])], 'u'),
      /other\.json was taken on another cluster/,
    );
  });
});
