// The batching decorator never sends an UPDATE the node admission policy refuses: every UPDATE
// it sends here is checked against a mirror of the policy's allocation, sequence and freed rules
// (charts/blockipam/templates/admission-policy.yaml; the real policy is walked in
// test/shared/policy-walk.int.test.ts), and a refused one fails its batch as the API server would.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import {
  autoAssign,
  createBatchingDatastore,
  isConflict,
  mustParseCidr,
  newBlock,
  releaseByHandle,
  withBlocks,
} from 'blockipam/core';
import type { BatchingDatastore, IPAMBlock } from 'blockipam/core';
import { deferred, probe } from './batching-probe.ts';
import type { Probe } from './batching-probe.ts';
import { pod, T0, world } from './fixtures.ts';
import type { World } from './fixtures.ts';

const BLOCK = '10-244-0-0-26';

/** What the policy refuses in `old` → `next` (allocations, sequence, freed); empty = admitted. */
function policyRefusal(old: IPAMBlock, next: IPAMBlock): string[] {
  const out: string[] = [];
  const oa = old.spec.allocations;
  const na = next.spec.allocations;
  const added = Object.keys(na).filter((k) => !(k in oa));
  for (const k of Object.keys(na)) if (k in oa && !isDeepStrictEqual(na[k], oa[k])) out.push(`in place ${k}`);
  const byOrdinal = (list: IPAMBlock['spec']['freed']) => {
    const m = new Map<string, (typeof list)[number]>();
    for (const e of list) {
      if (m.has(String(e.ordinal))) out.push(`freed ${e.ordinal} twice`);
      m.set(String(e.ordinal), e);
    }
    return m;
  };
  const nf = byOrdinal(next.spec.freed);
  byOrdinal(old.spec.freed);
  const kept = old.spec.freed.filter((e) => isDeepStrictEqual(nf.get(String(e.ordinal)), e));
  const lost = old.spec.freed.filter(
    (e) =>
      !isDeepStrictEqual(nf.get(String(e.ordinal)), e) &&
      !(String(e.ordinal) in na && !(String(e.ordinal) in oa)) &&
      !(nf.has(String(e.ordinal)) && !(String(e.ordinal) in na) && !(String(e.ordinal) in oa)),
  );
  if (lost.length > 0) out.push(`freed lost ${lost.map((e) => e.ordinal).join(',')}`);
  const fresh = next.spec.freed.length - kept.length;
  const released = next.spec.freed.filter(
    (e) => String(e.ordinal) in oa && !(String(e.ordinal) in na),
  ).length;
  const budget = added.length + fresh - released;
  const grown = next.spec.sequence - old.spec.sequence;
  const outside = added.filter(
    (k) => na[k]!.sequence <= old.spec.sequence || na[k]!.sequence > next.spec.sequence,
  );
  const repair = old.spec.sequence > 2 ** 52 && next.spec.sequence < old.spec.sequence && added.length === 0;
  if (!((grown === budget && outside.length === 0) || repair))
    out.push(`sequence +${grown}, budget ${budget}, outside [${outside.join(',')}]`);
  return out;
}

/** The probe's datastore with every block UPDATE checked (as the API server's admission). */
function policed(p: Probe, w: World, refusals: string[]) {
  const b = p.ds.blocks;
  return withBlocks(p.ds, {
    get: (n, o) => b.get(n, o),
    list: (o) => b.list(o),
    listMetadata: (o) => b.listMetadata(o),
    listPage: (o) => b.listPage(o),
    create: (x, o) => b.create(x, o),
    delete: (n, pre, o) => b.delete(n, pre, o),
    update: async (block, o) => {
      const old = await w.ds.blocks.get(block.metadata.name);
      if (old && old.metadata.resourceVersion === block.metadata.resourceVersion) {
        const why = policyRefusal(old, block);
        if (why.length > 0) {
          refusals.push(why.join('; '));
          throw new Error(`403 Forbidden: ${why.join('; ')}`);
        }
      }
      return b.update(block, o);
    },
  });
}

async function setup(options: { paceMs?: number; sleep?: (ms: number) => Promise<void> } = {}) {
  const w = world();
  await w.ds.blocks.create(
    newBlock({ cidr: mustParseCidr('10.244.0.0/26'), pool: 'default-v4', node: 'n1', nowMs: T0 }),
  );
  const p = probe(w.ds);
  const refusals: string[] = [];
  const bds: BatchingDatastore = createBatchingDatastore(policed(p, w, refusals), options);
  return { w, p, bds, refusals };
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let turn = 0; !condition(); turn++) {
    if (turn > 10_000) assert.fail(`never happened: ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

const annotate = (b: IPAMBlock, key: string): IPAMBlock => ({
  ...b,
  metadata: { ...b.metadata, annotations: { ...b.metadata.annotations, [key]: 'y' } },
});
const touch = async (bds: BatchingDatastore, key: string) =>
  bds.blocks.update(annotate((await bds.blocks.get(BLOCK)) as IPAMBlock, key));
const read = async (bds: BatchingDatastore) => (await bds.blocks.get(BLOCK)) as IPAMBlock;
/** `b` with allocation `key` of `from` back under another handle (a hand-made re-allocation). */
const readding = (b: IPAMBlock, key: string, from: IPAMBlock): IPAMBlock => ({
  ...b,
  spec: {
    ...b.spec,
    allocations: { ...b.spec.allocations, [key]: { ...from.spec.allocations[key]!, handle: 'other' } },
  },
});
/** `b` without allocation `key` (a hand-made release: no freed entry, enough to touch it). */
const without = (b: IPAMBlock, key: string): IPAMBlock => {
  const allocations = { ...b.spec.allocations };
  delete allocations[key];
  return { ...b, spec: { ...b.spec, allocations } };
};

async function fill(w: World, n: number): Promise<void> {
  for (let i = 0; i < n; i++)
    assert.ok((await autoAssign(w.ds, { ...pod(`old${i}`), node: 'n1' }, w.options)).ok);
}

describe('batching: every UPDATE sent is one the node policy admits', () => {
  it('ADD then DEL of the same handle: the DEL waits for the ADD to be sent, then goes next', async () => {
    const { w, p, bds, refusals } = await setup();
    const gate = deferred();
    p.gate = gate.promise;
    const first = touch(bds, 'in-flight');
    await until(() => p.counts.updates === 1, 'first sent');
    const add = autoAssign(bds, { ...pod('x'), node: 'n1' }, w.options); // queued
    await until(() => bds.stats().changesAccepted === 2, 'ADD queued');
    const del = releaseByHandle(bds, 'net.x.eth0', { node: 'n1' }, w.options);
    p.gate = undefined;
    gate.resolve();
    await first;
    assert.ok((await add).ok);
    assert.equal((await del).released.length, 1);
    assert.equal(bds.stats().ordinalWaits, 1);
    assert.equal(p.counts.updates, 3); // touch; ADD; DEL
    assert.deepEqual(((await w.ds.blocks.get(BLOCK)) as IPAMBlock).spec.allocations, {});
    assert.deepEqual(refusals, []);
    assert.deepEqual(await w.problems(), []);
  });

  it('aborted while waiting for the send: rejects with the reason at once, nothing of it sent', async () => {
    const { w, p, bds, refusals } = await setup();
    await fill(w, 1);
    const gate = deferred();
    p.gate = gate.promise;
    const first = touch(bds, 'in-flight');
    await until(() => p.counts.updates === 1, 'first sent');
    const s0 = await read(bds);
    const queued = bds.blocks.update(without(s0, '2')); // touches 2
    const abort = new AbortController();
    const waiting = bds.blocks.update(annotate(readding(await read(bds), '2', s0), 'w'), {
      signal: abort.signal,
    });
    abort.abort(new Error('budget spent'));
    await assert.rejects(waiting, /budget spent/);
    p.gate = undefined;
    gate.resolve();
    await first;
    await queued;
    assert.equal(p.counts.updates, 2);
    assert.equal((await w.ds.blocks.get(BLOCK))?.metadata.annotations?.['w'], undefined);
    assert.deepEqual(refusals, []);
  });

  it('the queued change it waits on is dropped: the waiting update wakes at once, ConflictError', async () => {
    const { w, p, bds } = await setup();
    await fill(w, 1);
    const gate = deferred();
    p.gate = gate.promise;
    const first = touch(bds, 'in-flight');
    await until(() => p.counts.updates === 1, 'first sent');
    const abort = new AbortController();
    const s0 = await read(bds);
    const queued = bds.blocks.update(without(s0, '2'), { signal: abort.signal });
    const waiting = bds.blocks.update(readding(await read(bds), '2', s0));
    abort.abort(new Error('gone'));
    await assert.rejects(queued, /gone/);
    await assert.rejects(waiting, isConflict); // before the UPDATE in flight returns
    assert.equal(bds.stats().ordinalWaits, 1);
    p.gate = undefined;
    gate.resolve();
    await first;
    assert.equal(p.counts.updates, 1);
  });

  it('a 409 on the UPDATE in flight while an ADD waits: it wakes, re-reads and lands', async () => {
    const { w, p, bds, refusals } = await setup();
    await fill(w, 61);
    const gate = deferred();
    p.gate = gate.promise;
    const first = touch(bds, 'in-flight');
    await until(() => p.counts.updates === 1, 'first sent');
    const del = releaseByHandle(bds, 'net.old7.eth0', { node: 'n1' }, w.options);
    await until(() => bds.stats().changesAccepted === 2, 'DEL queued');
    const add = autoAssign(bds, { ...pod('new'), node: 'n1' }, w.options);
    await until(() => bds.stats().ordinalWaits === 1, 'the ADD held');
    p.foreignFirst = () => p.foreignWrites === 0; // the UPDATE in flight meets a 409
    p.gate = undefined;
    gate.resolve();
    await assert.rejects(first, isConflict);
    assert.equal((await del).released.length, 1);
    assert.ok((await add).ok);
    assert.equal(bds.stats().serverConflicts, 1);
    assert.deepEqual(refusals, []);
    assert.deepEqual(await w.problems(), []);
  });

  it('paced: the waiting change wakes at the paced send and lands in the UPDATE after', async () => {
    const pace = deferred();
    const { w, p, bds, refusals } = await setup({ paceMs: 20, sleep: () => pace.promise });
    await fill(w, 61);
    const gate = deferred();
    p.gate = gate.promise;
    const first = touch(bds, 'in-flight');
    await until(() => p.counts.updates === 1, 'first sent');
    const del = releaseByHandle(bds, 'net.old7.eth0', { node: 'n1' }, w.options);
    await until(() => bds.stats().changesAccepted === 2, 'DEL queued');
    p.gate = undefined;
    gate.resolve();
    await first; // the DEL now held by the pace
    const add = autoAssign(bds, { ...pod('new'), node: 'n1' }, w.options);
    await until(() => bds.stats().ordinalWaits === 1, 'the ADD held');
    assert.equal(p.counts.updates, 1);
    pace.resolve();
    assert.equal((await del).released.length, 1);
    assert.ok((await add).ok);
    assert.equal(bds.stats().ordinalWaits, 1);
    assert.deepEqual(refusals, []);
  });

  it('churn in a full block: 40 concurrent DEL+ADD pairs, every UPDATE admitted', async () => {
    const { w, p, bds, refusals } = await setup();
    await fill(w, 61);
    const ops: Promise<unknown>[] = [];
    for (let i = 0; i < 40; i++) {
      ops.push(releaseByHandle(bds, `net.old${i}.eth0`, { node: 'n1' }, w.options));
      ops.push(autoAssign(bds, { ...pod(`new${i}`), node: 'n1' }, w.options));
    }
    const results = await Promise.allSettled(ops);
    const failed = results.flatMap((r) => (r.status === 'rejected' ? [String(r.reason)] : []));
    const notOk = results.filter(
      (r) => r.status === 'fulfilled' && (r.value as { ok?: boolean }).ok === false,
    );
    console.log(`# churn: ${p.counts.updates} UPDATEs, ${JSON.stringify(bds.stats())}`);
    assert.deepEqual(failed, []);
    assert.equal(notOk.length, 0);
    assert.deepEqual(refusals, []);
    assert.ok(bds.stats().ordinalWaits > 0, 'the churn re-allocated freed ordinals');
    assert.deepEqual(await w.problems(), []);
  });

  it('a release writing an unsafe sequence down and an ADD laid on it never share an UPDATE', async () => {
    const { w, bds, p, refusals } = await setup();
    await fill(w, 2);
    const b = (await w.ds.blocks.get(BLOCK)) as IPAMBlock;
    await w.ds.blocks.update({ ...b, spec: { ...b.spec, sequence: 2 ** 52 + 8 } }); // frozen
    const gate = deferred();
    p.gate = gate.promise;
    const first = touch(bds, 'in-flight');
    await until(() => p.counts.updates === 1, 'first sent');
    const del = releaseByHandle(bds, 'net.old0.eth0', { node: 'n1' }, w.options); // repairs
    await until(() => bds.stats().changesAccepted === 2, 'DEL queued');
    const add = autoAssign(bds, { ...pod('new'), node: 'n1' }, w.options); // the block unfrozen
    p.gate = undefined;
    gate.resolve();
    await first;
    assert.equal((await del).released.length, 1);
    assert.ok((await add).ok);
    assert.deepEqual(refusals, []);
    assert.equal(bds.stats().ordinalWaits, 1);
  });
});
