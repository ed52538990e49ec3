// The batching decorator's reads from another datastore (BatchingDatastore.readingFrom): a LIST
// from `reads` sees the busy blocks' speculative states, so a change computed on it joins the
// batch; a block `reads` has at a later resourceVersion than the batch's base (another writer)
// is waited for until idle and answered as `reads` has it, never hidden by a doomed batch.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { affineSelector, createBatchingDatastore, isConflict, mustParseCidr, newBlock } from 'blockipam/core';
import type { IPAMBlock } from 'blockipam/core';
import { deferred, foreignTouch, probe } from './batching-probe.ts';
import { T0, world } from './fixtures.ts';

const BLOCK = '10-244-0-0-26';

async function setup() {
  const w = world();
  await w.ds.blocks.create(
    newBlock({ cidr: mustParseCidr('10.244.0.0/26'), pool: 'default-v4', node: 'n1', nowMs: T0 }),
  );
  const p = probe(w.ds);
  const bds = createBatchingDatastore(p.ds);
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
});
