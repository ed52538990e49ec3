// The batching decorator's reads from another datastore (BatchingDatastore.readingFrom): a LIST
// from `reads` sees the busy blocks' speculative states, so a change computed on it joins the
// batch; a block `reads` has at a later resourceVersion than the batch's base (another writer)
// is waited for until idle and read afresh, never hidden by a doomed batch; nor answered from the
// copy listed before the wait (our own write seen early), nor laid over a block deleted meanwhile;
// a block that went idle while the LIST was in flight is read afresh when we wrote it later.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  affineSelector,
  autoAssign,
  createBatchingDatastore,
  isConflict,
  isNotFound,
  mustParseCidr,
  newBlock,
  releaseByHandle,
} from 'blockipam/core';
import type { IPAMBlock } from 'blockipam/core';
import { blocksWith } from '../helpers/blocks-with.ts';
import { deferred, foreignTouch, probe } from './batching-probe.ts';
import { pod, T0, world } from './fixtures.ts';

const BLOCK = '10-244-0-0-26';

/** A world with block BLOCK of n1, and a batching datastore over a probe of it. */
async function blockWorld() {
  const w = world();
  await w.ds.blocks.create(
    newBlock({ cidr: mustParseCidr('10.244.0.0/26'), pool: 'default-v4', node: 'n1', nowMs: T0 }),
  );
  const p = probe(w.ds);
  return { w, p, bds: createBatchingDatastore(p.ds) };
}

async function setup() {
  const { w, p, bds } = await blockWorld();
  // the batch in flight: an annotation change of the block, held at the probe's gate
  const open = deferred();
  p.gate = open.promise;
  const arrived = deferred();
  p.onUpdate = () => arrived.resolve();
  const read = (await bds.blocks.get(BLOCK)) as IPAMBlock;
  const batch = bds.blocks.update({
    ...read,
    metadata: { ...read.metadata, annotations: { mark: 'batch' } },
  });
  batch.catch(() => undefined); // settled by each test
  await arrived.promise;
  // `reads`: the memory store itself (the API server, where `p.ds` stands for a watch's view)
  const reading = bds.readingFrom(w.ds);
  const list = () => reading.blocks.list({ labelSelector: affineSelector('n1') });
  return { w, p, bds, open, batch, reading, list };
}

describe('batching datastore reading from another datastore', () => {
  it('a LIST sees the speculative state; a change on it joins the batch', async () => {
    const { p, bds, open, batch, reading, list } = await setup();
    const [listed] = await list();
    assert.ok(listed);
    assert.equal(listed.metadata.annotations?.mark, 'batch', 'the speculative state');
    assert.match(listed.metadata.resourceVersion ?? '', /~/, 'its token');
    const joined = reading.blocks.update({
      ...listed,
      metadata: { ...listed.metadata, annotations: { mark: 'joined' } },
    });
    open.resolve();
    await batch;
    const written = await joined;
    assert.equal(written.metadata.annotations?.mark, 'joined');
    assert.equal(p.counts.updates, 2, 'the batch, then one UPDATE carrying the joined change');
    assert.equal(bds.stats().localConflicts, 0);
  });

  it('a block another writer changed under the batch: the LIST waits for idle, answers its copy', async () => {
    const { w, open, batch, list } = await setup();
    await foreignTouch(w.ds, BLOCK); // the batch's base is now stale: its UPDATE will get a 409
    let answered = false;
    const listing = list().finally(() => (answered = true));
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(answered, false, 'held while the doomed batch is in flight');
    open.resolve();
    await assert.rejects(batch, (e) => isConflict(e));
    const [listed] = await listing;
    const stored = await w.ds.blocks.get(BLOCK);
    assert.equal(listed?.metadata.resourceVersion, stored?.metadata.resourceVersion, 'the copy as stored');
    assert.equal(listed?.metadata.annotations?.['test/touch'], '1', 'the other writer’s change is seen');
  });

  it('our own write seen by `reads` before its answer: the LIST answers the block as last written', async () => {
    const w = world();
    await w.ds.blocks.create(
      newBlock({ cidr: mustParseCidr('10.244.0.0/26'), pool: 'default-v4', node: 'n1', nowMs: T0 }),
    );
    // an inner store whose UPDATE lands at once but answers only when `answer` opens (as a watch
    // delivering our write's event before the API server's answer arrives)
    const answer = deferred();
    const landed = deferred();
    const b = w.ds.blocks;
    const inner = blocksWith(w.ds, {
      update: async (block, o) => {
        const written = await b.update(block, o);
        landed.resolve();
        await answer.promise;
        return written;
      },
    });
    const bds = createBatchingDatastore(inner);
    const mark = (b: IPAMBlock, value: string): IPAMBlock => ({
      ...b,
      metadata: { ...b.metadata, annotations: { mark: value } },
    });
    const first = bds.blocks.update(mark((await bds.blocks.get(BLOCK)) as IPAMBlock, 'first'));
    await landed.promise;
    // a change queued on the speculative state: it goes out once the first UPDATE is answered
    const second = bds.blocks.update(mark((await bds.blocks.get(BLOCK)) as IPAMBlock, 'second'));
    // `reads` lists the block at our first write's resourceVersion, before that write is answered
    const listed1 = deferred();
    const reads = blocksWith(w.ds, {
      list: async (o) => {
        const got = await b.list(o);
        listed1.resolve();
        return got;
      },
    });
    const listing = bds.readingFrom(reads).blocks.list({ labelSelector: affineSelector('n1') });
    await listed1.promise;
    answer.resolve();
    await Promise.all([first, second]);
    const [listed] = await listing;
    const stored = await w.ds.blocks.get(BLOCK);
    assert.equal(listed?.metadata.annotations?.mark, 'second', 'the state as last written');
    assert.equal(listed?.metadata.resourceVersion, stored?.metadata.resourceVersion);
    // a change computed on it is written without a conflict
    await bds.blocks.update(mark(listed, 'third'));
    assert.equal(bds.stats().serverConflicts, 0);
  });

  it('a busy block deleted meanwhile: the LIST leaves it out and a DEL answers "released 0"', async () => {
    const w = world();
    await w.ds.blocks.create(
      newBlock({ cidr: mustParseCidr('10.244.0.0/26'), pool: 'default-v4', node: 'n1', nowMs: T0 }),
    );
    const got = await autoAssign(w.ds, { ...pod('a'), node: 'n1' }, w.options);
    assert.ok(got.ok);
    const p = probe(w.ds);
    const bds = createBatchingDatastore(p.ds);
    const open = deferred();
    p.gate = open.promise;
    const arrived = deferred();
    p.onUpdate = () => arrived.resolve();
    const read = (await bds.blocks.get(BLOCK)) as IPAMBlock;
    const batch = bds.blocks.update({ ...read, metadata: { ...read.metadata, annotations: { mark: 'b' } } });
    batch.catch(() => undefined);
    await arrived.promise;
    await w.ds.blocks.delete(BLOCK); // the block goes (an operator, say) while the batch is in flight
    const reading = bds.readingFrom(w.ds);
    // listed while the batch is still in flight: never the speculative state of a deleted block
    const listing = reading.blocks.list({ labelSelector: affineSelector('n1') });
    const releasing = releaseByHandle(reading, 'net.a.eth0', { node: 'n1' }, w.options);
    open.resolve();
    await assert.rejects(batch, (e) => isNotFound(e));
    assert.deepEqual(await listing, [], 'the deleted block is not listed');
    const released = await releasing;
    assert.deepEqual(released.released, [], 'nothing to release: the block is gone');
    assert.equal(p.counts.updates, 1, 'no release UPDATE queued on the deleted block');
  });
  it('a LIST read before our UPDATE committed, answered once the block is idle: DEL releases it', async () => {
    const { w, p, bds } = await blockWorld();
    // ADD(a): its UPDATE held at the gate, before it lands
    const open = deferred();
    p.gate = open.promise;
    const arrived = deferred();
    p.onUpdate = () => arrived.resolve();
    const adding = autoAssign(bds, { ...pod('a'), node: 'n1' }, w.options);
    await arrived.promise;
    p.gate = undefined;
    // `reads` lists the store now (without a's address) and answers only when `answer` opens
    const listed = deferred();
    const answer = deferred();
    const b = w.ds.blocks;
    const reads = blocksWith(w.ds, {
      list: async (o) => {
        const got = await b.list(o);
        listed.resolve();
        await answer.promise;
        return got;
      },
    });
    // DEL(a) confirmed at `reads`: its LIST goes out while the ADD's UPDATE is in flight
    const releasing = releaseByHandle(bds.readingFrom(reads), 'net.a.eth0', { node: 'n1' }, w.options);
    await listed.promise;
    open.resolve(); // the UPDATE lands and is answered: the block goes idle
    assert.ok((await adding).ok);
    answer.resolve();
    const released = await releasing;
    assert.equal(released.released.length, 1, 'the address the ADD wrote is released');
    const stored = await w.ds.blocks.get(BLOCK);
    assert.deepEqual(Object.keys(stored?.spec.allocations ?? {}), [], 'nothing of a is left allocated');
  });
});
