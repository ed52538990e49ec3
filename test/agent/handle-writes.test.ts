// The agent's record of what its own block writes did to each handle (ipam/handle-writes.ts):
// derived from each written block against the copy it was computed on; a released handle is
// remembered for 10 min.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { newBlock, parseCidr } from 'blockipam/core';
import type { IPAMBlock } from 'blockipam/core';
import { handleWrites } from '../../block-controller/agent/ipam/handle-writes.ts';

const NOW = Date.parse('2026-12-01T00:00:00Z');
const empty = newBlock({ cidr: parseCidr('10.70.0.0/26')!, pool: 'v4', node: 'n1', nowMs: NOW });
/** `block` with ordinal → handle allocated (and nothing else). */
const holding = (block: IPAMBlock, byOrdinal: Record<number, string>): IPAMBlock => ({
  ...block,
  spec: {
    ...block.spec,
    allocations: Object.fromEntries(
      Object.entries(byOrdinal).map(([ordinal, handle]) => [
        ordinal,
        { handle, node: 'n1', allocatedAt: '2026-12-01T00:00:00Z', sequence: 1 },
      ]),
    ),
  },
});

describe('handle writes', () => {
  test('an allocation written is recorded with its address; its release leaves []', () => {
    const writes = handleWrites(() => NOW);
    const one = holding(empty, { 5: 'net.a.eth0' });
    writes.record(empty, one);
    assert.deepEqual(writes.get('net.a.eth0'), ['10.70.0.5']);
    assert.equal(writes.get('net.b.eth0'), undefined, 'never written');
    writes.record(one, empty);
    assert.deepEqual(writes.get('net.a.eth0'), [], 'released by us');
  });

  test('a handle’s addresses in two blocks add up; releasing one keeps the other', () => {
    const writes = handleWrites(() => NOW);
    const other = newBlock({ cidr: parseCidr('10.70.0.64/26')!, pool: 'v4', node: 'n1', nowMs: NOW });
    writes.record(empty, holding(empty, { 1: 'net.a.eth0' }));
    writes.record(other, holding(other, { 2: 'net.a.eth0' }));
    assert.deepEqual(writes.get('net.a.eth0'), ['10.70.0.1', '10.70.0.66']);
    writes.record(holding(empty, { 1: 'net.a.eth0' }), empty);
    assert.deepEqual(writes.get('net.a.eth0'), ['10.70.0.66']);
  });

  test('a created block records what it holds; others’ allocations left alone are not ours', () => {
    const writes = handleWrites(() => NOW);
    const theirs = holding(empty, { 3: 'net.x.eth0' });
    writes.record(undefined, holding(empty, { 4: 'net.c.eth0' }));
    assert.deepEqual(writes.get('net.c.eth0'), ['10.70.0.4']);
    writes.record(theirs, holding(empty, { 3: 'net.x.eth0', 6: 'net.d.eth0' }));
    assert.equal(writes.get('net.x.eth0'), undefined, 'unchanged by our write');
    assert.deepEqual(writes.get('net.d.eth0'), ['10.70.0.6']);
  });

  test('a released handle is remembered 10 min, an allocated one until forgotten by the bound', () => {
    const now = { ms: NOW };
    const writes = handleWrites(() => now.ms);
    const one = holding(empty, { 5: 'net.a.eth0', 6: 'net.b.eth0' });
    writes.record(empty, one);
    writes.record(one, holding(empty, { 6: 'net.b.eth0' }));
    now.ms += 10 * 60_000 - 1;
    assert.deepEqual(writes.get('net.a.eth0'), []);
    now.ms += 1;
    assert.equal(writes.get('net.a.eth0'), undefined, 'forgotten after 10 min');
    assert.deepEqual(writes.get('net.b.eth0'), ['10.70.0.6']);
  });
});
