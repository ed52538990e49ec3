import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { claimPoolsData, sameClaimPoolsData } from 'blockipam/core';
import { pool } from './fixtures.ts';

describe('claimPoolsData: the pool list the admission policy checks claims against', () => {
  test('one entry per pool: cidr, block size (default by family), state', () => {
    const deleting = pool('going', { cidr: '10.3.0.0/16' });
    const data = claimPoolsData([
      // usable, default /26
      pool('a', { cidr: '10.244.0.0/16' }),
      // usable IPv6, default /122
      pool('v6', { cidr: 'fd00:10::/64' }),
      // disabled
      pool('off', { cidr: '10.2.0.0/16', blockSize: 28, disabled: true }),
      // being deleted
      { ...deleting, metadata: { ...deleting.metadata, deletionTimestamp: '2026-12-01T00:00:00Z' } },
      // overlaps the older pool a: never used
      pool('late', { cidr: '10.244.128.0/17', blockSize: 24 }, '2026-11-20T00:00:00Z'),
    ]);
    assert.deepEqual(data, {
      a: '10.244.0.0/16 26 usable',
      going: '10.3.0.0/16 26 deleting',
      late: '10.244.128.0/17 24 shadowed',
      off: '10.2.0.0/16 28 disabled',
      v6: 'fd00:10::/64 122 usable',
    });
  });

  test('no pools: empty data (every claim refused)', () => {
    assert.deepEqual(claimPoolsData([]), {});
  });

  test('sameClaimPoolsData compares entries, not order; absent data equals empty', () => {
    assert.equal(sameClaimPoolsData({ a: '1', b: '2' }, { b: '2', a: '1' }), true);
    assert.equal(sameClaimPoolsData(undefined, {}), true);
    assert.equal(sameClaimPoolsData({ a: '1' }, { a: '2' }), false);
    assert.equal(sameClaimPoolsData({ a: '1', b: '2' }, { a: '1' }), false);
  });
});
