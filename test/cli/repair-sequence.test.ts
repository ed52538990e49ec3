// ipamctl repair sequence on the memory store (the API server's compare-and-swap, proved by the
// contract suite): the plan alone without --yes (exit 3), the write with it, a block whose
// sequences are safe or that does not exist refused (exit 2, named), a lost race planned again
// from a fresh GET, at most 5 rounds. The API server's side: check-tamper.int.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isConflict, isSafeSequence, MemoryDatastore, SEQUENCE_MAX } from 'blockipam/core';
import type { IPAMBlock } from 'blockipam/core';
import { blockNameArg, repairSequence } from '../../cli/commands/repair/sequence.ts';
import { isCliError } from '../../cli/io.ts';
import type { Io } from '../../cli/io.ts';
import { MAIN, shapedBlock, SHAPES_T0 } from '../core/block-shapes.ts';

const NOW = SHAPES_T0 + 3_600_000;
const NAME = '10-244-88-192-26';

function io(): Io & { out: () => string; err: () => string } {
  let stdout = '';
  let stderr = '';
  return {
    argv: [],
    env: {},
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
    out: () => stdout,
    err: () => stderr,
  };
}

/** node-2's block holding ordinal 6, its sequences made unsafe unless `safe`. */
function seeded(safe = false): MemoryDatastore {
  const b: IPAMBlock = shapedBlock({ cidr: '10.244.88.192/26', allocations: { 6: 'node-2' } });
  if (!safe) {
    b.spec.sequence = 2 ** 53;
    b.spec.allocations[6]!.sequence = SEQUENCE_MAX;
  }
  return new MemoryDatastore({ pools: [MAIN], blocks: [b] });
}

/** Before each of the first `times` UPDATEs: another write of the block (as a node's release). */
function writeBeforeUpdate(ds: MemoryDatastore, times: number): { updates: number } {
  const update = ds.blocks.update.bind(ds.blocks);
  const calls = { updates: 0 };
  ds.blocks.update = async (...a: Parameters<typeof update>) => {
    calls.updates += 1;
    if (calls.updates <= times) {
      const current = (await ds.blocks.get(NAME))!;
      const annotations = { 'example.com/write': String(calls.updates) };
      await update({ ...current, metadata: { ...current.metadata, annotations } });
    }
    return update(...a);
  };
  return calls;
}

test('without --yes: the plan, nothing written, exit 3', async () => {
  const ds = seeded();
  const before = await ds.blocks.get(NAME);
  const run = io();
  assert.equal(await repairSequence(ds, { block: NAME, yes: false, nowMs: NOW }, run), 3);
  assert.match(run.out(), /spec\.sequence 9007199254740992 is above 2\^52/);
  assert.match(run.out(), /Would write:\nSEQUENCE +HANDLE +FROM +TO\n/);
  assert.match(run.out(), new RegExp(`spec\\.sequence +- +9007199254740992 +${NOW + 1}\\n`));
  assert.match(run.out(), new RegExp(`allocation 6 +net\\.c6\\.eth0 +9007199254740991 +${NOW + 1}`));
  assert.match(run.err(), /Nothing was changed: re-run with --yes/);
  assert.deepEqual(await ds.blocks.get(NAME), before);
});

test('with --yes: safe sequences written, the next allocation above them', async () => {
  const ds = seeded();
  const run = io();
  // a CIDR names its block
  assert.equal(await repairSequence(ds, { block: '10.244.88.192/26', yes: true, nowMs: NOW }, run), 0);
  const after = (await ds.blocks.get(NAME))!;
  assert.equal(after.spec.sequence, NOW + 1);
  assert.equal(after.spec.allocations[6]?.sequence, NOW + 1);
  assert.ok(isSafeSequence(after.spec.sequence));
  assert.match(run.out(), new RegExp(`IPAMBlock ${NAME} repaired: spec\\.sequence is ${NOW + 1}\\.`));
});

test('a block whose sequences are all safe is refused, naming it', async () => {
  const ds = seeded(true);
  await assert.rejects(repairSequence(ds, { block: NAME, yes: true, nowMs: NOW }, io()), (e: Error) => {
    assert.ok(isCliError(e));
    assert.match(e.message, new RegExp(`^IPAMBlock ${NAME} has no unsafe sequence .*: nothing to repair`));
    return true;
  });
});

test('a block that does not exist is refused, naming it', async () => {
  await assert.rejects(
    repairSequence(seeded(), { block: '10-244-0-0-26', yes: true, nowMs: NOW }, io()),
    /IPAMBlock 10-244-0-0-26 does not exist/,
  );
});

test('a lost compare-and-swap reads the block again and writes', async () => {
  const ds = seeded();
  const calls = writeBeforeUpdate(ds, 2);
  const run = io();
  assert.equal(await repairSequence(ds, { block: NAME, yes: true, nowMs: NOW }, run), 0);
  assert.equal(calls.updates, 3, 'two lost rounds, then the write that held');
  assert.equal(run.out().match(/changed meanwhile: reading it again/g)?.length, 2);
  assert.equal((await ds.blocks.get(NAME))?.spec.sequence, NOW + 1);
});

test('the retries are bounded: 5 lost rounds end in the conflict, nothing written', async () => {
  const ds = seeded();
  const calls = writeBeforeUpdate(ds, Infinity);
  await assert.rejects(repairSequence(ds, { block: NAME, yes: true, nowMs: NOW }, io()), isConflict);
  assert.equal(calls.updates, 5);
  assert.equal((await ds.blocks.get(NAME))?.spec.sequence, 2 ** 53);
});

test('a block repaired by another writer during a lost round: nothing more to do, exit 0', async () => {
  const ds = seeded();
  const update = ds.blocks.update.bind(ds.blocks);
  let first = true;
  ds.blocks.update = async (...a: Parameters<typeof update>) => {
    if (first) {
      first = false;
      await update({ ...a[0], spec: { ...a[0].spec, sequence: NOW + 5 } });
    }
    return update(...a);
  };
  const run = io();
  assert.equal(await repairSequence(ds, { block: NAME, yes: true, nowMs: NOW }, run), 0);
  assert.match(run.out(), /has no unsafe sequence any more \(written meanwhile\): nothing to do\./);
  assert.equal((await ds.blocks.get(NAME))?.spec.sequence, NOW + 5);
});

test('BLOCK: a name or a block CIDR, anything else refused before any request', () => {
  assert.equal(blockNameArg('10-244-0-0-26'), '10-244-0-0-26');
  assert.equal(blockNameArg('fd00:10:244::/122'), 'fd00-10-244---122');
  assert.throws(() => blockNameArg('10.244.0.5/26'), /is neither an IPAMBlock name/);
  assert.throws(() => blockNameArg('Bad_Name'), /is neither an IPAMBlock name/);
});
