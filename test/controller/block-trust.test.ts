// The controller's block trust step on the memory datastore: Trusted=False with core's reason on
// a hostile block, written once (not every pass, not on an allocation's generation bump), an
// Event only on a transition, Trusted=True when the block is fixed, nothing written for blocks
// that were always trusted, and the gauge by reason. A frozen block (core/block/frozen.ts) is its
// own verdict: Trusted=True with reason Frozen, a BlockFrozen Event and the frozen gauge.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { MemoryDatastore, mustParseCidr, newBlock, newStats, nodeLabel } from 'blockipam/core';
import type { IPAMBlock, IPPool } from 'blockipam/core';
import type { ControllerEvent } from '../../block-controller/controller/events.ts';
import { controllerMetrics } from '../../block-controller/controller/metrics.ts';
import { EventBudget } from '../../block-controller/controller/pass.ts';
import type { PassContext } from '../../block-controller/controller/pass.ts';
import { blockTrustStep } from '../../block-controller/controller/status/block-trust.ts';
import type { ClusterView } from '../../block-controller/controller/view.ts';
import { FREEZES, memoryLog, TestClock } from './helpers.ts';

const POOL: IPPool = {
  metadata: { name: 'p', creationTimestamp: '2026-11-01T00:00:00Z' },
  spec: { cidr: '10.72.0.0/16' },
};

function block(cidr: string, node: string | null, labels: Record<string, string> = {}): IPAMBlock {
  const b = newBlock({
    cidr: mustParseCidr(cidr),
    pool: 'p',
    node,
    nowMs: Date.parse('2026-12-03T08:00:00Z'),
  });
  b.metadata.labels = { ...b.metadata.labels, ...labels };
  return b;
}

/** A memory store with the pool, and one step runner that reads it afresh like the watches. */
function setup(options: { write?: boolean } = {}) {
  const ds = new MemoryDatastore({ pools: [POOL] });
  const events: ControllerEvent[] = [];
  const registry = new Registry();
  const metrics = controllerMetrics(registry);
  const clock = new TestClock(Date.parse('2026-12-03T09:00:00Z'));
  const step = async (mayWrite = true) => {
    const [blocks, pools] = await Promise.all([ds.blocks.list(), ds.pools.list()]);
    const view = { blocks: () => blocks, pools: () => pools } as unknown as ClusterView;
    const budget = new EventBudget({ emit: (e) => Promise.resolve(void events.push(e)) }, 50);
    const ctx: PassContext = {
      ds,
      view,
      clock: clock.now,
      log: memoryLog(),
      metrics,
      events: budget,
      allocator: { clock: clock.now, stats: newStats() },
      mayWrite: () => mayWrite,
      ...(options.write === false ? {} : { blockStatus: (b: IPAMBlock) => ds.blocks.updateStatus(b) }),
    };
    const done = await blockTrustStep(ctx);
    await budget.flush();
    return done;
  };
  const gaugeOf = (name: string) => async (reason: string) =>
    (await registry.getSingleMetric(name)?.get())?.values.find((v) => v.labels['reason'] === reason)?.value;
  const gauge = gaugeOf('blockipam_ipam_blocks_ignored');
  const frozenGauge = gaugeOf('blockipam_ipam_blocks_frozen');
  return { ds, events, step, clock, gauge, frozenGauge };
}

const trustedOf = async (ds: MemoryDatastore, name: string) =>
  (await ds.blocks.get(name))?.status?.conditions?.find((c) => c.type === 'Trusted');

void describe('controller: blocks Trusted condition', () => {
  void it('flags a hostile block once, with one Event; never writes the trusted ones', async () => {
    const w = setup();
    // node-2's /26, and node-1's /28 inside it (issue 23, D1)
    await w.ds.blocks.create(block('10.72.0.192/26', 'node-2'));
    await w.ds.blocks.create(block('10.72.0.192/28', null));
    const first = await w.step();
    assert.deepEqual(first.written, ['10-72-0-192-28']);
    const flagged = await trustedOf(w.ds, '10-72-0-192-28');
    assert.equal(flagged?.status, 'False');
    assert.equal(flagged?.reason, 'SizeMismatch');
    assert.match(flagged?.message ?? '', /is a \/28 but IPPool p has blockSize 26/);
    assert.equal(flagged?.lastTransitionTime, '2026-12-03T09:00:00Z');
    assert.equal(flagged?.observedGeneration, 1);
    assert.equal((await w.ds.blocks.get('10-72-0-192-26'))?.status, undefined, 'the victim is not written');
    assert.deepEqual(
      w.events.map((e) => [e.name, e.type, e.reason]),
      [['10-72-0-192-28', 'Warning', 'BlockIgnoredSizeMismatch']],
    );
    assert.equal(await w.gauge('size-mismatch'), 1);
    assert.equal(await w.gauge('overlap'), 0);
    // the next pass: nothing new to say
    w.clock.advance(60);
    assert.deepEqual((await w.step()).written, []);
    assert.equal(w.events.length, 1);
  });

  void it('an allocation (generation bump) alone writes nothing; a fix writes True with an Event', async () => {
    const w = setup();
    const forged = await w.ds.blocks.create(
      block('10.72.1.0/26', 'node-1', { [nodeLabel('node-2')]: 'affine' }),
    );
    await w.step();
    assert.equal((await trustedOf(w.ds, '10-72-1-0-26'))?.reason, 'LabelsMismatch');
    // a spec change keeps the condition (status subresource) and is no reason to rewrite it
    const stored = (await w.ds.blocks.get(forged.metadata.name))!;
    await w.ds.blocks.update({ ...stored, spec: { ...stored.spec, sequence: stored.spec.sequence + 1 } });
    assert.deepEqual((await w.step()).written, []);
    // the forged label removed: trusted again
    const now = (await w.ds.blocks.get(forged.metadata.name))!;
    const labels = { ...now.metadata.labels };
    delete labels[nodeLabel('node-2')];
    await w.ds.blocks.update({ ...now, metadata: { ...now.metadata, labels } });
    w.clock.advance(60);
    assert.deepEqual((await w.step()).written, ['10-72-1-0-26']);
    const fixed = await trustedOf(w.ds, '10-72-1-0-26');
    assert.deepEqual(
      [fixed?.status, fixed?.reason, fixed?.lastTransitionTime],
      ['True', 'Trusted', '2026-12-03T09:01:00Z'],
    );
    assert.deepEqual(
      w.events.map((e) => [e.type, e.reason]),
      [
        ['Warning', 'BlockIgnoredLabelsMismatch'],
        ['Normal', 'BlockTrusted'],
      ],
    );
  });

  // Each freeze reason, as the admission policy cannot stop an admin (or, before it, a node) writing it.
  for (const [reason, freeze] of FREEZES)
    void it(`${reason}: Trusted=True reason Frozen, one BlockFrozen Event, the gauge; thawed: Trusted`, async () => {
      const w = setup();
      const frozen = block('10.72.2.0/26', 'node-1');
      freeze(frozen);
      await w.ds.blocks.create(frozen);
      const first = await w.step();
      assert.deepEqual(
        [first.written, first.frozen, first.ignored],
        [['10-72-2-0-26'], ['10-72-2-0-26'], []],
      );
      const c = await trustedOf(w.ds, '10-72-2-0-26');
      assert.deepEqual([c?.status, c?.reason], ['True', 'Frozen']);
      assert.match(c?.message ?? '', new RegExp(`^routed and releasable, not allocated from: ${reason}: `));
      assert.deepEqual(
        w.events.map((e) => [e.type, e.reason, e.note]),
        [['Warning', 'BlockFrozen', c?.message]],
      );
      assert.equal(await w.frozenGauge(reason), 1);
      assert.deepEqual((await w.step()).written, [], 'nothing new to say');
      // thawed (an admin removes what froze it): allocated from again
      const stored = (await w.ds.blocks.get('10-72-2-0-26'))!;
      const thawed = block('10.72.2.0/26', 'node-1');
      await w.ds.blocks.update({
        ...thawed,
        metadata: { ...thawed.metadata, resourceVersion: stored.metadata.resourceVersion },
      });
      w.clock.advance(60);
      assert.deepEqual((await w.step()).written, ['10-72-2-0-26']);
      const after = await trustedOf(w.ds, '10-72-2-0-26');
      assert.deepEqual(
        [after?.status, after?.reason, after?.message],
        ['True', 'Trusted', 'routed and allocated from'],
      );
      assert.deepEqual(
        w.events.map((e) => [e.type, e.reason]),
        [
          ['Warning', 'BlockFrozen'],
          ['Normal', 'BlockTrusted'],
        ],
      );
      assert.equal(await w.frozenGauge(reason), 0);
    });

  void it('writes nothing when it may not (not leading) or has no status writer', async () => {
    // a deposed leader, and a reconciler without blockStatus: they count, never write
    const cases = [
      { w: setup(), mayWrite: false },
      { w: setup({ write: false }), mayWrite: true },
    ];
    for (const { w, mayWrite } of cases) {
      await w.ds.blocks.create(block('10.99.0.0/26', 'node-1'));
      const done = await w.step(mayWrite);
      assert.deepEqual(done.ignored, ['10-99-0-0-26']);
      assert.deepEqual(done.written, []);
      assert.equal(await trustedOf(w.ds, '10-99-0-0-26'), undefined);
      assert.equal(w.events.length, 0);
      assert.equal(await w.gauge('outside-pools'), 1);
    }
  });
});
