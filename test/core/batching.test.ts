// The batching decorator over the memory datastore: concurrent allocator calls on one block share
// UPDATEs, no caller is answered before the write holding its change, a server 409 or failure
// reaches every caller of the batch, deletes wait, an aborted caller's queued change is dropped.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  autoAssign,
  createBatchingDatastore,
  isConflict,
  isUnavailable,
  mustParseCidr,
  newBlock,
  releaseByHandle,
  UnavailableError,
} from 'blockipam/core';
import type { AssignOutcome, BatchingDatastore, IPAMBlock } from 'blockipam/core';
import { deferred, foreignTouch, probe } from './batching-probe.ts';
import type { Probe } from './batching-probe.ts';
import { pod, T0, world } from './fixtures.ts';
import type { World } from './fixtures.ts';

const BLOCK = '10-244-0-0-26';

/** A world with one /26 block already claimed by n1, the probe, and the decorator over it. */
async function setup(options: { paceMs?: number; sleep?: (ms: number) => Promise<void> } = {}): Promise<{
  w: World;
  p: Probe;
  bds: BatchingDatastore;
}> {
  const w = world();
  await w.ds.blocks.create(
    newBlock({ cidr: mustParseCidr('10.244.0.0/26'), pool: 'default-v4', node: 'n1', nowMs: T0 }),
  );
  const p = probe(w.ds);
  return { w, p, bds: createBatchingDatastore(p.ds, options) };
}

/** `b` with annotation `key: y` added. */
const annotate = (b: IPAMBlock, key: string): IPAMBlock => ({
  ...b,
  metadata: { ...b.metadata, annotations: { ...b.metadata.annotations, [key]: 'y' } },
});

/** Reads BLOCK through `bds` and writes it back with annotation `key` added. */
const touch = async (bds: BatchingDatastore, key: string) =>
  bds.blocks.update(annotate((await bds.blocks.get(BLOCK)) as IPAMBlock, key));

/** Waits, turn by turn of the event loop, until `condition` holds (fails after 10,000 turns). */
async function until(condition: () => boolean, what: string): Promise<void> {
  for (let turn = 0; !condition(); turn++) {
    if (turn > 10_000) assert.fail(`never happened: ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** `n` concurrent ADDs on n1 over `ds`, handles `net.<prefix><i>.eth0`, with answer flags. */
function adds(w: World, ds: BatchingDatastore, n: number, prefix = 'p') {
  const answered: boolean[] = Array.from({ length: n }, () => false);
  const all = Promise.allSettled(
    Array.from({ length: n }, (_, i) =>
      autoAssign(ds, { ...pod(`${prefix}${i}`), node: 'n1' }, w.options).finally(() => (answered[i] = true)),
    ),
  );
  return { answered, all };
}

function okAddresses(results: PromiseSettledResult<AssignOutcome>[]): string[] {
  return results.map((r) => {
    if (r.status === 'rejected') assert.fail(String(r.reason));
    const outcome = r.value;
    assert.ok(outcome.ok && outcome.ipv4, JSON.stringify(outcome));
    return outcome.ipv4.address;
  });
}

/** handle → ordinal of every allocation in the stored block. */
async function stored(w: World): Promise<Map<string, number>> {
  const block = (await w.ds.blocks.get(BLOCK)) as IPAMBlock;
  const out = new Map<string, number>();
  for (const [ordinal, a] of Object.entries(block.spec.allocations)) {
    assert.equal(out.has(a.handle), false, `handle ${a.handle} twice`);
    out.set(a.handle, Number(ordinal));
  }
  return out;
}

describe('batching datastore', () => {
  it('50 concurrent ADDs of one node share a few UPDATEs: all distinct, invariants hold', async () => {
    const { w, p, bds } = await setup();
    const { all } = adds(w, bds, 50);
    const addresses = okAddresses(await all);
    assert.equal(new Set(addresses).size, 50);
    assert.equal((await stored(w)).size, 50);
    assert.deepEqual(await w.problems(), []);
    const s = bds.stats();
    // Each UPDATE carries every change that queued during the one before it.
    assert.ok(p.counts.updates <= 10, `inner UPDATEs: ${p.counts.updates}`);
    console.log(
      `# 50 ADDs: ${p.counts.updates} UPDATEs, ${JSON.stringify(s)}, allocator ${JSON.stringify(w.stats)}`,
    );
    assert.equal(s.updatesSent, p.counts.updates);
    assert.equal(s.changesWritten, 50);
    assert.ok(s.batches >= 1);
    assert.equal(w.stats.claims, 0);
  });

  it('answers no caller before the UPDATE holding its change succeeded', async () => {
    const { w, p, bds } = await setup();
    const gate = deferred();
    p.gate = gate.promise;
    const { answered, all } = adds(w, bds, 10);
    await until(() => bds.stats().changesAccepted === 10, 'all 10 changes accepted');
    await new Promise((resolve) => setImmediate(resolve)); // an early answer would have run by now
    assert.deepEqual(answered, Array(10).fill(false));
    assert.equal(p.counts.updates, 1); // the first change in flight, held; 9 queued on top
    assert.equal((await stored(w)).size, 0);
    gate.resolve();
    assert.equal(new Set(okAddresses(await all)).size, 10);
    assert.equal(p.counts.updates, 2);
    assert.deepEqual(bds.stats().batches, 1);
  });

  it('reads show the queued changes; a token read just before idle still writes without conflict', async () => {
    const { w, p, bds } = await setup();
    const gate = deferred();
    p.gate = gate.promise;
    const first = adds(w, bds, 1, 'a');
    await until(() => bds.stats().changesAccepted === 1, 'first change accepted');
    const seen = (await bds.blocks.get(BLOCK)) as IPAMBlock;
    assert.equal(Object.keys(seen.spec.allocations).length, 1);
    assert.match(seen.metadata.resourceVersion ?? '', /~/);
    const listed = await bds.blocks.list();
    assert.deepEqual(
      listed.find((b) => b.metadata.name === BLOCK),
      seen,
    );
    gate.resolve();
    await first.all;
    // `seen` is the state just written: its token stands for the written resourceVersion.
    const next = structuredClone(seen);
    next.metadata.annotations = { note: 'x' };
    const written = await bds.blocks.update(next);
    assert.equal(written.metadata.annotations?.['note'], 'x');
    assert.equal(bds.stats().localConflicts, 0);
    // An older token (not the state written last) is refused locally.
    await assert.rejects(bds.blocks.update(seen), isConflict);
    assert.equal(bds.stats().localConflicts, 1);
    assert.equal(p.counts.updates, 2);
  });

  it('a foreign write during a batch: 409, every caller re-reads and re-applies, nothing lost', async () => {
    const { w, p, bds } = await setup();
    const gate = deferred();
    p.gate = gate.promise;
    const { all } = adds(w, bds, 12);
    await until(() => bds.stats().changesAccepted === 12, 'all 12 changes accepted');
    // Another writer (a standalone plugin, say) allocates in the block meanwhile.
    const foreign = await autoAssign(w.ds, { ...pod('foreign'), node: 'n1' }, w.options);
    assert.ok(foreign.ok);
    p.gate = undefined;
    gate.resolve();
    const addresses = okAddresses(await all);
    assert.equal(new Set([...addresses, foreign.ipv4?.address]).size, 13);
    const handles = await stored(w);
    assert.deepEqual(
      [...handles.keys()].sort(),
      [...Array.from({ length: 12 }, (_, i) => `net.p${i}.eth0`), 'net.foreign.eth0'].sort(),
    );
    assert.equal(bds.stats().serverConflicts, 1);
    assert.ok(w.stats.conflicts >= 12, `allocator conflicts: ${w.stats.conflicts}`);
    assert.deepEqual(await w.problems(), []);
  });

  it('an UnavailableError fails every caller of the batch; the next read is the server state', async () => {
    const { w, p, bds } = await setup();
    const gate = deferred();
    p.gate = gate.promise;
    p.failWith = () => new UnavailableError('PUT ipamblocks: connection refused');
    const { all } = adds(w, bds, 8);
    await until(() => bds.stats().changesAccepted === 8, 'all 8 changes accepted');
    gate.resolve();
    const results = await all;
    for (const r of results) assert.ok(r.status === 'rejected' && isUnavailable(r.reason), String(r.status));
    assert.equal(p.counts.updates, 1);
    assert.deepEqual(await bds.blocks.get(BLOCK), await w.ds.blocks.get(BLOCK));
    assert.deepEqual((await bds.blocks.list())[0], await w.ds.blocks.get(BLOCK));
    assert.equal((await stored(w)).size, 0);
  });

  it('releases and allocations in one batch', async () => {
    const { w, p, bds } = await setup();
    for (let i = 0; i < 5; i++)
      assert.ok((await autoAssign(w.ds, { ...pod(`old${i}`), node: 'n1' }, w.options)).ok);
    const gate = deferred();
    p.gate = gate.promise;
    const releases = Array.from({ length: 5 }, (_, i) =>
      releaseByHandle(bds, `net.old${i}.eth0`, { node: 'n1' }, w.options),
    );
    const { all } = adds(w, bds, 5, 'new');
    await until(() => bds.stats().changesAccepted === 10, 'all 10 changes accepted');
    gate.resolve();
    for (const r of await Promise.all(releases)) assert.equal(r.released.length, 1);
    okAddresses(await all);
    assert.equal(p.counts.updates, 2);
    assert.deepEqual(
      [...(await stored(w)).keys()].sort(),
      Array.from({ length: 5 }, (_, i) => `net.new${i}.eth0`),
    );
    assert.deepEqual(await w.problems(), []);
  });

  it('a delete with preconditions waits until the block is idle; a token precondition conflicts', async () => {
    const { w, p, bds } = await setup();
    const before = (await w.ds.blocks.get(BLOCK)) as IPAMBlock;
    const gate = deferred();
    p.gate = gate.promise;
    const { all } = adds(w, bds, 1);
    await until(() => bds.stats().changesAccepted === 1, 'change accepted');
    const token = (await bds.blocks.get(BLOCK))?.metadata.resourceVersion;
    const deleting = bds.blocks.delete(BLOCK, {
      resourceVersion: before.metadata.resourceVersion,
      uid: before.metadata.uid,
    });
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(p.counts.deletes, 0); // held while the write is in flight
    gate.resolve();
    okAddresses(await all);
    await assert.rejects(deleting, isConflict); // the write moved the resourceVersion first
    assert.equal(p.counts.deletes, 1);
    assert.equal((await stored(w)).size, 1);
    // A token never written stands for no resourceVersion.
    await assert.rejects(bds.blocks.delete(BLOCK, { resourceVersion: `${token}0` }), isConflict);
    const now = (await bds.blocks.get(BLOCK)) as IPAMBlock;
    await bds.blocks.delete(BLOCK, { resourceVersion: now.metadata.resourceVersion, uid: now.metadata.uid });
    assert.equal(await w.ds.blocks.get(BLOCK), undefined);
  });

  it('an aborted queued change is dropped unsent; the ones after it re-read; one in flight lands', async () => {
    const { p, bds } = await setup();
    const gate = deferred();
    p.gate = gate.promise;
    const sent: string[][] = [];
    p.onUpdate = (b) => sent.push(Object.keys(b.metadata.annotations ?? {}).sort());
    const read = async () => (await bds.blocks.get(BLOCK)) as IPAMBlock;
    const inFlight = new AbortController();
    const first = bds.blocks.update(annotate(await read(), 'first'), { signal: inFlight.signal });
    const abort = new AbortController();
    const second = bds.blocks.update(annotate(await read(), 'second'), { signal: abort.signal });
    const third = bds.blocks.update(annotate(await read(), 'third'));
    abort.abort(new Error('budget spent'));
    assert.equal(bds.stats().changesAborted, 1); // dropped at once, while the UPDATE is held
    await assert.rejects(second, /budget spent/);
    await assert.rejects(third, isConflict); // laid on the dropped change: re-read, re-apply
    assert.deepEqual(Object.keys((await read()).metadata.annotations ?? {}).sort(), ['first']);
    const fourth = bds.blocks.update(annotate(await read(), 'fourth'));
    inFlight.abort(new Error('first gave up'));
    await assert.rejects(first, /first gave up/); // sent already: it lands
    gate.resolve();
    const written = await fourth;
    assert.deepEqual(Object.keys(written.metadata.annotations ?? {}).sort(), ['first', 'fourth']);
    assert.deepEqual(sent, [['first'], ['first', 'fourth']]); // 'second' and 'third' never sent
    const s = bds.stats();
    assert.deepEqual(
      [s.changesAccepted, s.changesWritten, s.changesAborted, s.changesRejected, s.updatesWritten],
      [4, 2, 1, 1, 2],
    );
  });

  it('a release and the re-allocation of its ordinal never share an UPDATE (no entry changed in place)', async () => {
    const { w, p, bds } = await setup();
    // the block full: 61 assignable ordinals (2-62 of a /26)
    for (let i = 0; i < 61; i++)
      assert.ok((await autoAssign(w.ds, { ...pod(`old${i}`), node: 'n1' }, w.options)).ok);
    const ordinalOf = (await stored(w)).get('net.old7.eth0');
    let previous = (await w.ds.blocks.get(BLOCK)) as IPAMBlock;
    const inPlace: string[] = [];
    p.onUpdate = (sent) => {
      for (const [k, a] of Object.entries(sent.spec.allocations)) {
        const was = previous.spec.allocations[k];
        if (was && was.handle !== a.handle) inPlace.push(`${k}: ${was.handle} → ${a.handle}`);
      }
      previous = structuredClone(sent);
    };
    const gate = deferred();
    p.gate = gate.promise;
    const first = touch(bds, 'in-flight'); // sent at once, held by the gate
    await until(() => p.counts.updates === 1, 'the first UPDATE sent');
    const release = releaseByHandle(bds, 'net.old7.eth0', { node: 'n1' }, w.options); // queued
    await until(() => bds.stats().changesAccepted === 2, 'the release queued');
    // the only free ordinal is the one the queued release frees
    const add = autoAssign(bds, { ...pod('new'), node: 'n1' }, w.options);
    await until(() => bds.stats().ordinalWaits === 1, "the ADD's change held");
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(p.counts.updates, 1); // held until the release is sent, then re-read
    p.gate = undefined;
    gate.resolve();
    await first;
    assert.equal((await release).released.length, 1);
    const added = await add;
    assert.ok(added.ok && added.ipv4, JSON.stringify(added));
    assert.equal((await stored(w)).get('net.new.eth0'), ordinalOf);
    assert.deepEqual(inPlace, []);
    assert.equal(p.counts.updates, 3); // the touch; the release; the re-allocation
    assert.equal(bds.stats().ordinalWaits, 1);
    assert.deepEqual(await w.problems(), []);
  });

  it("paceMs holds a busy block's next UPDATE; a lone change of an idle block never waits", async () => {
    const pace = deferred();
    const asked: number[] = [];
    const { p, bds } = await setup({
      paceMs: 20,
      sleep: (ms) => {
        asked.push(ms);
        return pace.promise;
      },
    });
    // a lone change: out at once, nothing held
    await touch(bds, 'lone');
    assert.deepEqual([p.counts.updates, asked], [1, []]);
    // a burst: the first goes at once; one queued behind it is held after it returns, and the
    // changes of that moment join it in one UPDATE
    const gate = deferred();
    p.gate = gate.promise;
    const writes = [touch(bds, 'a')];
    await until(() => p.counts.updates === 2, 'a sent');
    writes.push(touch(bds, 'b'));
    await until(() => bds.stats().changesAccepted === 3, 'b queued');
    p.gate = undefined;
    gate.resolve();
    await until(() => asked.length === 1, 'the pace asked for');
    assert.equal(p.counts.updates, 2, 'b held, not sent');
    writes.push(touch(bds, 'c'));
    await until(() => bds.stats().changesAccepted === 4, 'c queued');
    writes.push(touch(bds, 'd'));
    await until(() => bds.stats().changesAccepted === 5, 'd queued');
    pace.resolve();
    const results = await Promise.all(writes);
    assert.deepEqual(asked, [20]);
    assert.equal(p.counts.updates, 3, 'b, c and d in one UPDATE');
    assert.deepEqual(Object.keys(results[3]!.metadata.annotations ?? {}).sort(), [
      'a',
      'b',
      'c',
      'd',
      'lone',
    ]);
    assert.deepEqual(await bds.blocks.get(BLOCK), await p.ds.blocks.get(BLOCK)); // idle again
  });

  it('paceMs: every held change aborted → no UPDATE, the block idle at its written state', async () => {
    const pace = deferred();
    const { p, bds } = await setup({ paceMs: 20, sleep: () => pace.promise });
    const gate = deferred();
    p.gate = gate.promise;
    const b = (await bds.blocks.get(BLOCK)) as IPAMBlock;
    const first = bds.blocks.update({ ...b, metadata: { ...b.metadata, annotations: { a: 'y' } } });
    await until(() => p.counts.updates === 1, 'a sent');
    const busy = (await bds.blocks.get(BLOCK)) as IPAMBlock;
    const abort = new AbortController();
    const held = bds.blocks.update(
      { ...busy, metadata: { ...busy.metadata, annotations: { a: 'y', b: 'y' } } },
      { signal: abort.signal },
    );
    p.gate = undefined;
    gate.resolve();
    const written = await first;
    abort.abort(new Error('budget spent'));
    await assert.rejects(held, /budget spent/);
    pace.resolve();
    await until(() => bds.stats().changesAborted === 1, 'b dropped');
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(p.counts.updates, 1);
    const now = (await bds.blocks.get(BLOCK)) as IPAMBlock;
    assert.deepEqual(now.spec, written.spec);
    assert.deepEqual(now.metadata.annotations, { a: 'y' });
    // a change computed on what it reads writes without a conflict
    await bds.blocks.update({ ...now, metadata: { ...now.metadata, annotations: { c: 'y' } } });
    assert.equal(p.counts.updates, 2);
    assert.deepEqual((await p.ds.blocks.get(BLOCK))?.metadata.annotations, { c: 'y' });
  });

  it('concurrent GETs of an idle block share one inner GET, never one sent before a write', async () => {
    const { p, bds } = await setup();
    const held = deferred();
    p.getGate = held.promise;
    const both = Promise.all([bds.blocks.get(BLOCK), bds.blocks.get(BLOCK)]);
    await until(() => p.counts.gets === 1, 'first GET sent');
    held.resolve();
    const [a, b] = await both;
    assert.deepEqual(a, b);
    assert.equal(p.counts.gets, 1);
    // A GET held in flight, then a write through the decorator: a later GET is a new one.
    const again = deferred();
    p.getGate = again.promise;
    const early = bds.blocks.get(BLOCK);
    await until(() => p.counts.gets === 2, 'second GET sent');
    const b2 = a as IPAMBlock;
    await bds.blocks.update({ ...b2, metadata: { ...b2.metadata, annotations: { written: 'yes' } } });
    const late = bds.blocks.get(BLOCK);
    await until(() => p.counts.gets === 3, 'a GET of its own after the write');
    again.resolve();
    await early;
    assert.equal((await late)?.metadata.annotations?.['written'], 'yes');
  });

  it('a foreign touch of an idle block is seen at once (idle blocks are not cached)', async () => {
    const { w, bds } = await setup();
    assert.ok((await autoAssign(bds, { ...pod('x'), node: 'n1' }, w.options)).ok);
    await foreignTouch(w.ds, BLOCK);
    assert.deepEqual(await bds.blocks.get(BLOCK), await w.ds.blocks.get(BLOCK));
  });
});
