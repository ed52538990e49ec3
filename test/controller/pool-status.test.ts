// The controller's IPPool status step on the memory datastore, fed by core's real allocator: a
// tiny pool filled pod by pod moves Ready → NearlyExhausted (no unclaimed block) → Exhausted and
// back; one Warning Event per transition, none on a pass without change, none for a flap within
// the rate limit; lastTransitionTime moves only with a status; short nodes listed; the pool,
// node and churn metrics; a pool flapping Allocatable says each state once per interval, and a
// deleted pool is forgotten by the rate limit.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { autoAssign, releaseByHandle } from 'blockipam/core';
import type { Condition, IPPool } from 'blockipam/core';
import type { ControllerEvent } from '../../block-controller/controller/events.ts';
import { controllerMetrics } from '../../block-controller/controller/metrics.ts';
import { Reconciler } from '../../block-controller/controller/reconciler.ts';
import { pod, pool, world } from '../core/fixtures.ts';
import { listedView, memoryLog, TestClock } from './helpers.ts';

/** /26 in /28 blocks: 4 blocks × 13 assignable = 52. */
function setup() {
  const w = world({
    pools: [pool('tiny', { cidr: '10.80.0.0/26', blockSize: 28 })],
    config: { minFreeAddressesPerNode: 4, leakGracePeriodSeconds: 0 },
    nodes: { n1: {}, n2: {} },
  });
  const events: ControllerEvent[] = [];
  const registry = new Registry();
  const clock = new TestClock(Date.parse('2026-12-03T09:00:00Z'));
  const r = new Reconciler({
    ds: w.ds,
    view: { notReady: () => 'replaced per pass' } as never,
    log: memoryLog(),
    clock: clock.now,
    metrics: controllerMetrics(registry),
    events: { emit: (e) => Promise.resolve(void events.push(e)) },
  });
  let next = 0;
  const fill = async (n: number) => {
    for (let i = 0; i < n; i += 1) {
      const got = await autoAssign(w.ds, { ...pod(String(next++)), node: 'n1' }, w.options);
      assert.ok(got.ok, `allocation ${next}: ${got.ok ? '' : got.message}`);
    }
  };
  const release = (id: number) => releaseByHandle(w.ds, `net.${id}.eth0`, {}, w.options);
  const pass = async () => (await r.pass({ view: await listedView(w.ds) })).status?.written ?? [];
  const status = async () => ((await w.ds.pools.get('tiny')) as IPPool).status;
  const condition = async (type: string) =>
    (await status())?.conditions?.find((c) => c.type === type) ?? assert.fail(type);
  const alerts = () =>
    events.filter((e) => e.reason.startsWith('PoolNearly') || e.reason === 'PoolExhausted');
  const metric = async (name: string, labels: Record<string, string>) =>
    (await registry.getSingleMetric(`blockipam_${name}`)?.get())?.values.find((v) =>
      Object.entries(labels).every(([k, value]) => v.labels[k] === value),
    )?.value;
  return { w, r, events, clock, fill, release, pass, status, condition, alerts, metric, next: () => next };
}

const brief = (c: Condition) => [c.status, c.reason];

void describe('controller: pool conditions', () => {
  void it('Ready → NearlyExhausted → Exhausted → back, one Event per transition', async () => {
    const t = setup();
    await t.fill(10); // blocks 1 and partly 2 claimed
    assert.deepEqual(await t.pass(), ['tiny']);
    let s = await t.status();
    assert.equal(s?.state, 'Ready');
    assert.deepEqual(
      { allocated: s?.allocated, free: s?.free, blocks: s?.blocks, unclaimed: s?.unclaimedBlocks },
      { allocated: 10, free: 42, blocks: 1, unclaimed: 3 },
    );
    assert.deepEqual(brief(await t.condition('NearlyExhausted')), ['False', 'BelowThreshold']);
    const readySince = (await t.condition('Ready')).lastTransitionTime;
    assert.deepEqual(t.alerts(), []);

    t.clock.advance(60);
    await t.fill(30); // 40 of 52 (77 %), but all four blocks claimed
    assert.deepEqual(await t.pass(), ['tiny']);
    s = await t.status();
    assert.equal(s?.state, 'NearlyExhausted');
    assert.deepEqual(brief(await t.condition('NearlyExhausted')), ['True', 'NoUnclaimedBlocks']);
    assert.equal((await t.condition('Ready')).lastTransitionTime, readySince);
    const nearlySince = (await t.condition('NearlyExhausted')).lastTransitionTime;
    assert.notEqual(nearlySince, readySince);
    // n1 still has 12 free in its blocks; n2 has none and no block left to claim
    assert.deepEqual(s?.shortNodes, [{ node: 'n2', free: 0, blocks: 0, reason: 'NoUnclaimedBlocks' }]);
    assert.equal(s?.shortNodeCount, 1);
    assert.deepEqual(
      t.alerts().map((e) => [e.type, e.reason, e.kind, e.name]),
      [['Warning', 'PoolNearlyExhausted', 'IPPool', 'tiny']],
    );
    assert.match(t.alerts()[0]?.note ?? '', /NoUnclaimedBlocks.*every block of the pool is claimed/);

    // nothing changed: nothing written, no Event
    assert.deepEqual(await t.pass(), []);
    assert.equal(t.alerts().length, 1);

    t.clock.advance(60);
    await t.fill(12); // 52 of 52
    const refused = await autoAssign(t.w.ds, { ...pod('one-too-many'), node: 'n1' }, t.w.options);
    assert.equal(refused.ok, false);
    await t.pass();
    s = await t.status();
    assert.equal(s?.state, 'Exhausted');
    assert.deepEqual(brief(await t.condition('Exhausted')), ['True', 'NoFreeAddresses']);
    assert.deepEqual(brief(await t.condition('Ready')), ['False', 'Exhausted']);
    assert.deepEqual(brief(await t.condition('NearlyExhausted')), ['True', 'AboveThreshold']);
    assert.equal((await t.condition('NearlyExhausted')).lastTransitionTime, nearlySince);
    assert.deepEqual(
      s?.shortNodes?.map((n) => [n.node, n.free]),
      [
        ['n1', 0],
        ['n2', 0],
      ],
    );
    assert.deepEqual(
      t.alerts().map((e) => e.reason),
      ['PoolNearlyExhausted', 'PoolExhausted'],
    );
    assert.equal(await t.metric('ipam_ippool_condition', { ippool: 'tiny', condition: 'Exhausted' }), 1);
    assert.equal(await t.metric('ipam_ippool_free', { ippool: 'tiny' }), 0);
    assert.equal(
      await t.metric('ipam_node_short', { ippool: 'tiny', node: 'n1', reason: 'NoUnclaimedBlocks' }),
      1,
    );

    // one address back: no longer exhausted; exhausted again within 10 min: no second Event
    t.clock.advance(60);
    await t.release(0);
    await t.pass();
    assert.deepEqual(brief(await t.condition('Exhausted')), ['False', 'FreeAddresses']);
    assert.equal((await t.status())?.state, 'NearlyExhausted');
    await t.fill(1);
    await t.pass();
    assert.deepEqual(brief(await t.condition('Exhausted')), ['True', 'NoFreeAddresses']);
    assert.equal(t.alerts().length, 2);
    // after the rate limit's 10 min, the next transition is news again
    t.clock.advance(600);
    await t.release(1);
    await t.pass();
    await t.fill(1);
    await t.pass();
    assert.deepEqual(
      t.alerts().map((e) => e.reason),
      ['PoolNearlyExhausted', 'PoolExhausted', 'PoolExhausted'],
    );

    // scale down: every address released and the empty blocks gone (the agent's release)
    for (let id = 0; id < t.next(); id += 1) await t.release(id);
    for (const b of await t.w.ds.blocks.list()) await t.w.ds.blocks.delete(b.metadata.name);
    await t.pass();
    assert.equal((await t.status())?.state, 'Ready');
    assert.deepEqual(brief(await t.condition('NearlyExhausted')), ['False', 'BelowThreshold']);
    assert.deepEqual((await t.status())?.shortNodes, []);
  });

  void it('Allocatable flapping: one Event per state per interval; a deleted pool is forgotten', async () => {
    const t = setup();
    const allocatable = () =>
      t.events.filter((e) => e.note?.startsWith('Allocatable=')).map((e) => [e.type, e.reason]);
    const disable = async (disabled: boolean) => {
      const p = (await t.w.ds.pools.get('tiny')) ?? assert.fail('pool tiny');
      await t.w.ds.pools.update({ ...p, spec: { ...p.spec, disabled } });
    };
    await t.pass();
    assert.deepEqual(allocatable(), [['Normal', 'OK']]);
    // disabled and enabled three times within 10 min: each state once, not one Event per flip
    for (let flip = 0; flip < 3; flip += 1) {
      t.clock.advance(60);
      await disable(true);
      assert.deepEqual(await t.pass(), ['tiny']);
      await disable(false);
      assert.deepEqual(await t.pass(), ['tiny']);
    }
    assert.deepEqual(allocatable(), [
      ['Normal', 'OK'],
      ['Warning', 'PoolDisabled'],
    ]);
    // after the interval, the next change is news again
    t.clock.advance(600);
    await disable(true);
    await t.pass();
    assert.deepEqual(allocatable().at(-1), ['Warning', 'PoolDisabled']);
    assert.equal(allocatable().length, 3);

    // the pool deleted: its entries go at the next pass; re-created, its first status says so
    assert.equal(t.r.poolEvents.pools, 1);
    await t.w.ds.pools.delete('tiny');
    await t.pass();
    assert.equal(t.r.poolEvents.pools, 0);
    await t.w.ds.pools.create(pool('tiny', { cidr: '10.80.0.0/26', blockSize: 28, disabled: true }));
    await t.pass();
    assert.deepEqual(allocatable().at(-1), ['Warning', 'PoolDisabled']);
    assert.equal(allocatable().length, 4);
  });

  void it('metrics: pool figures, node headroom, block claims and releases, leaks found', async () => {
    const t = setup();
    await t.fill(2);
    await t.pass(); // seeds the block churn: no claim counted for what existed before
    assert.equal(await t.metric('ipam_block_claims_total', { ippool: 'tiny' }), undefined);
    await t.fill(24); // 26: blocks 2 and 3 claimed (13 each)
    await t.pass();
    assert.equal(await t.metric('ipam_block_claims_total', { ippool: 'tiny' }), 1);
    await t.fill(1); // 27: a third block
    await t.pass();
    assert.equal(await t.metric('ipam_block_claims_total', { ippool: 'tiny' }), 2);
    for (const [name, value] of [
      ['ipam_ippool_size', 52],
      ['ipam_ippool_allocated', 27],
      ['ipam_ippool_free', 25],
      ['ipam_ippool_free_in_claimed_blocks', 12],
      ['ipam_ippool_blocks_claimed', 3],
      ['ipam_ippool_blocks_unclaimed', 1],
    ] as const)
      assert.equal(await t.metric(name, { ippool: 'tiny' }), value, name);
    assert.equal(await t.metric('ipam_node_headroom', { ippool: 'tiny', node: 'n1' }), 12);
    assert.equal(await t.metric('ipam_node_headroom', { ippool: 'tiny', node: 'n2' }), 0);
    assert.equal(await t.metric('ipam_ippool_condition', { ippool: 'tiny', condition: 'Ready' }), 1);
    // no pod objects exist for these allocations: each is a leak (pod-gone), counted once
    assert.equal(await t.metric('ipam_leaks_found_total', { ippool: 'tiny', reason: 'pod-gone' }), 27);
    // a released (deleted) block
    for (let id = 26; id < 27; id += 1) await t.release(id);
    const third = (await t.w.ds.blocks.list()).find((b) => Object.keys(b.spec.allocations).length === 0);
    await t.w.ds.blocks.delete(third?.metadata.name ?? assert.fail('empty block'));
    await t.pass();
    assert.equal(await t.metric('ipam_block_releases_total', { ippool: 'tiny' }), 1);
    assert.equal(await t.metric('ipam_ippool_blocks_unclaimed', { ippool: 'tiny' }), 2);
  });
});
