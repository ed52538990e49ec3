// The controller's managedFields step on the memory datastore: a block whose record another
// writer grew is written back as watched (KubeDatastore's update resets the record on the API
// server: test/controller/podcidr-blocks.int.test.ts) with one Warning Event; a block with a
// record of normal size is not written; a deposed leader writes nothing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MemoryDatastore, mustParseCidr, newBlock, newStats } from 'blockipam/core';
import type { IPAMBlock } from 'blockipam/core';
import type { ControllerEvent } from '../../block-controller/controller/events.ts';
import { EventBudget } from '../../block-controller/controller/pass.ts';
import type { PassContext } from '../../block-controller/controller/pass.ts';
import { managedFieldsStep } from '../../block-controller/controller/status/managed-fields.ts';
import type { ClusterView } from '../../block-controller/controller/view.ts';
import { memoryLog, TestClock } from './helpers.ts';

const junk = Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`f:junk.example/k${i}`, {}]));
const RECORDS = {
  grown: [{ manager: 'planter', operation: 'Update', fieldsV1: { 'f:metadata': { 'f:labels': junk } } }],
  normal: [{ manager: 'blockipam', operation: 'Update', fieldsV1: { 'f:spec': { 'f:cidr': {} } } }],
};

/** `target` with `name`'s calls recorded first (the memory store's updates of an unchanged block are no-ops). */
function spied<T extends object>(target: T, name: string, calls: unknown[][]): T {
  return new Proxy(target, {
    get(t, key) {
      const value: unknown = Reflect.get(t, key);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (key === name) calls.push(args);
        return (value as (...a: unknown[]) => unknown).apply(t, args);
      };
    },
  });
}

async function setup(): Promise<{
  ds: MemoryDatastore;
  updates: unknown[][];
  step: (mayWrite?: boolean) => Promise<{ reset: string[]; events: ControllerEvent[] }>;
}> {
  const ds = new MemoryDatastore({});
  for (const [cidr, record] of [
    ['10.72.3.0/26', RECORDS.grown],
    ['10.72.4.0/26', RECORDS.normal],
  ] as const) {
    const block: IPAMBlock = newBlock({ cidr: mustParseCidr(cidr), pool: 'p', node: 'node-1', nowMs: 0 });
    block.metadata.managedFields = [...record];
    await ds.blocks.create(block);
  }
  const clock = new TestClock(Date.parse('2026-12-05T08:00:00Z'));
  const updates: unknown[][] = [];
  const blocks = spied(ds.blocks, 'update', updates);
  const spiedDs = new Proxy(ds, {
    get: (t, key) => (key === 'blocks' ? blocks : (Reflect.get(t, key) as unknown)),
  });
  const step = async (mayWrite = true) => {
    const watched = await ds.blocks.list();
    const events: ControllerEvent[] = [];
    const budget = new EventBudget({ emit: (e) => Promise.resolve(void events.push(e)) }, 50);
    const ctx: PassContext = {
      ds: spiedDs,
      view: { blocks: () => watched } as unknown as ClusterView,
      clock: clock.now,
      log: memoryLog(),
      events: budget,
      allocator: { clock: clock.now, stats: newStats() },
      mayWrite: () => mayWrite,
    };
    const reset = await managedFieldsStep(ctx);
    await budget.flush();
    return { reset, events };
  };
  return { ds, updates, step };
}

void describe('controller: oversized managedFields', () => {
  void it('the grown block is written back as watched, with one Warning Event naming the size', async () => {
    const w = await setup();
    const before = await w.ds.blocks.get('10-72-3-0-26');
    const { reset, events } = await w.step();
    assert.deepEqual(reset, ['10-72-3-0-26']);
    assert.deepEqual(w.updates, [[before]], 'the block written back as watched, nothing else');
    assert.deepEqual(
      events.map((e) => [e.name, e.type, e.reason]),
      [['10-72-3-0-26', 'Warning', 'ManagedFieldsReset']],
    );
    assert.match(events[0]!.note, /^metadata\.managedFields were \d+ bytes \(bound \d+\): reset/);
  });

  void it('a deposed leader writes nothing', async () => {
    const w = await setup();
    const before = await w.ds.blocks.get('10-72-3-0-26');
    assert.deepEqual((await w.step(false)).reset, []);
    assert.equal(
      (await w.ds.blocks.get('10-72-3-0-26'))?.metadata.resourceVersion,
      before?.metadata.resourceVersion,
    );
  });
});
