// The controller's podCIDR blocks step on the memory datastore: every node's podCIDR in a pool
// with spec.podCIDRBlocks becomes its block (created, or an unowned one given to it), once; a
// tile affine to another node is left alone with one Warning Event per run; without such a pool
// nothing is read or written; a deposed leader writes nothing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MemoryDatastore, mustParseCidr, newBlock, newStats } from 'blockipam/core';
import type { IPPool } from 'blockipam/core';
import { podCIDRBlockStep } from '../../block-controller/controller/adopt/podcidr-blocks.ts';
import type { ControllerEvent } from '../../block-controller/controller/events.ts';
import { EventBudget } from '../../block-controller/controller/pass.ts';
import type { PassContext } from '../../block-controller/controller/pass.ts';
import type { ClusterView, WatchedNode } from '../../block-controller/controller/view.ts';
import { memoryLog, TestClock } from './helpers.ts';

const pool = (podCIDRBlocks: boolean): IPPool => ({
  metadata: { name: 'kind', creationTimestamp: '2026-11-01T00:00:00Z' },
  spec: { cidr: '10.244.0.0/16', blockSize: 24, podCIDRBlocks },
});
const node = (name: string, podCIDR?: string): WatchedNode => ({
  metadata: { name },
  ...(podCIDR ? { spec: { podCIDRs: [podCIDR] } } : {}),
});

function setup(pools: IPPool[], nodes: WatchedNode[]) {
  const ds = new MemoryDatastore({ pools });
  const events: ControllerEvent[] = [];
  const clock = new TestClock(Date.parse('2026-12-05T08:00:00Z'));
  const reported = new Set<string>();
  const step = async (mayWrite = true) => {
    const blocks = await ds.blocks.list();
    const view = { blocks: () => blocks, pools: () => pools, nodes: () => nodes } as unknown as ClusterView;
    const budget = new EventBudget({ emit: (e) => Promise.resolve(void events.push(e)) }, 50);
    const ctx: PassContext = {
      ds,
      view,
      clock: clock.now,
      log: memoryLog(),
      events: budget,
      allocator: { clock: clock.now, stats: newStats() },
      mayWrite: () => mayWrite,
    };
    const done = await podCIDRBlockStep(ctx, reported);
    await budget.flush();
    return done;
  };
  return { ds, events, step };
}

void describe('controller: podCIDR blocks', () => {
  void it('creates each node’s podCIDR block once; gives an unowned one; reports a foreign one once', async () => {
    const w = setup(
      [pool(true)],
      [node('n1', '10.244.1.0/24'), node('n2', '10.244.2.0/24'), node('n3', '10.244.3.0/24'), node('n4')],
    );
    await w.ds.blocks.create(
      newBlock({ cidr: mustParseCidr('10.244.2.0/24'), pool: 'kind', node: null, nowMs: 0 }),
    );
    await w.ds.blocks.create(
      newBlock({ cidr: mustParseCidr('10.244.3.0/24'), pool: 'kind', node: 'n1', nowMs: 0 }),
    );
    const first = await w.step();
    assert.deepEqual([first.created, first.assigned], [['10-244-1-0-24'], ['10-244-2-0-24']]);
    assert.equal(first.conflicts.length, 1);
    assert.equal((await w.ds.blocks.get('10-244-1-0-24'))?.spec.affinity, 'n1');
    const given = await w.ds.blocks.get('10-244-2-0-24');
    assert.deepEqual([given?.spec.affinity, given?.spec.affinityClaimTime], ['n2', '2026-12-05T08:00:00Z']);
    assert.deepEqual(
      given?.metadata.labels,
      newBlock({ cidr: mustParseCidr('10.244.2.0/24'), pool: 'kind', node: 'n2', nowMs: 0 }).metadata.labels,
      "core's labels, the node's affine label among them",
    );
    assert.equal(
      (await w.ds.blocks.get('10-244-3-0-24'))?.spec.affinity,
      'n1',
      'a foreign block is left alone',
    );
    assert.deepEqual(
      w.events.map((e) => [e.kind, e.name, e.type, e.reason]),
      [
        ['Node', 'n3', 'Warning', 'PodCIDRBlockConflict'],
        ['IPAMBlock', '10-244-1-0-24', 'Normal', 'PodCIDRBlockCreated'],
        ['IPAMBlock', '10-244-2-0-24', 'Normal', 'PodCIDRBlockAssigned'],
      ],
    );
    const again = await w.step();
    assert.deepEqual([again.created, again.assigned, again.conflicts.length], [[], [], 1]);
    assert.equal(w.events.length, 3, 'the conflict is announced once');
  });

  void it('nothing without a podCIDR pool, and nothing written by a deposed leader', async () => {
    const plain = setup([pool(false)], [node('n1', '10.244.1.0/24')]);
    assert.deepEqual((await plain.step()).created, []);
    const deposed = setup([pool(true)], [node('n1', '10.244.1.0/24')]);
    assert.deepEqual((await deposed.step(false)).created, []);
    assert.deepEqual(await deposed.ds.blocks.list(), []);
  });
});
