// ipamctl pool delete's write steps on the memory store (the API server's compare-and-swap and
// delete preconditions, proved by the contract suite): a write that loses a race (409) starts the
// steps over from a fresh GET, at most 5 rounds, and a retry still refuses an allocation that
// appeared meanwhile.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { allocateOrdinal, isConflict, MemoryDatastore, newBlock, parseCidr } from 'blockipam/core';
import { deletePool } from '../../cli/commands/pool/delete.ts';
import { isCliError } from '../../cli/io.ts';
import { pool, T0 } from '../core/fixtures.ts';

const io = () => ({ argv: [], env: {}, stdout: { write: () => true }, stderr: { write: () => true } });

/** Pool p4 with one empty block of it, and a count of pool DELETE calls. */
function seeded() {
  const block = newBlock({ cidr: parseCidr('10.244.0.0/26')!, pool: 'p4', node: 'n1', nowMs: T0 });
  const ds = new MemoryDatastore({ pools: [pool('p4', { cidr: '10.244.0.0/24' })], blocks: [block] });
  const calls = { poolDeletes: 0 };
  const remove = ds.pools.delete.bind(ds.pools);
  ds.pools.delete = (...a: Parameters<typeof remove>) => ((calls.poolDeletes += 1), remove(...a));
  return { ds, calls };
}

/** Before the DELETE `times` times: a status write (as the controller's), which bumps the resourceVersion. */
function statusWriteBeforeDelete(ds: MemoryDatastore, times: number): void {
  const remove = ds.pools.delete.bind(ds.pools);
  let writes = 0;
  ds.pools.delete = async (...a: Parameters<typeof remove>) => {
    if (writes < times) {
      writes += 1;
      const current = (await ds.pools.get('p4'))!;
      await ds.pools.updateStatus({ ...current, status: { allocated: writes } });
    }
    return remove(...a);
  };
}

test('a pool DELETE that loses to a status write is retried and the pool deleted', async () => {
  const { ds, calls } = seeded();
  statusWriteBeforeDelete(ds, 2);
  assert.equal(await deletePool(ds, { name: 'p4', yes: true }, io()), 0);
  assert.equal(await ds.pools.get('p4'), undefined);
  assert.deepEqual(await ds.blocks.list(), []);
  assert.equal(calls.poolDeletes, 3, 'two lost rounds, then the DELETE that held');
});

test('the retries are bounded: 5 lost rounds end in the conflict, the pool left disabled', async () => {
  const { ds, calls } = seeded();
  statusWriteBeforeDelete(ds, Infinity);
  await assert.rejects(deletePool(ds, { name: 'p4', yes: true }, io()), isConflict);
  assert.equal(calls.poolDeletes, 5);
  assert.equal((await ds.pools.get('p4'))?.spec.disabled, true);
});

test('an allocation that lands in a block during a lost round is refused on the retry', async () => {
  const { ds } = seeded();
  const remove = ds.blocks.delete.bind(ds.blocks);
  let first = true;
  ds.blocks.delete = async (...a: Parameters<typeof remove>) => {
    if (first) {
      first = false; // a pod is given an address from the block between the LIST and the DELETE
      const block = (await ds.blocks.get('10-244-0-0-26'))!;
      const owner = { handle: 'net.a.eth0', node: 'n1', namespace: 'ns', pod: 'a', podUID: 'u' };
      await ds.blocks.update(allocateOrdinal(block, 5, owner, T0)!.block);
    }
    return remove(...a);
  };
  await assert.rejects(
    deletePool(ds, { name: 'p4', yes: true }, io()),
    (error) => isCliError(error) && /still has 1 allocation\(s\) in 10-244-0-0-26/.test(error.message),
  );
  assert.ok(await ds.pools.get('p4'), 'nothing deleted');
  assert.ok(await ds.blocks.get('10-244-0-0-26'));
});
