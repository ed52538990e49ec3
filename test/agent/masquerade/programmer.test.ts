// The masquerade pass and loop over an in-memory table: nothing read or written before the
// pools are listed; written at start, then only when the pools change or the table drifted
// (deleted or edited by hand, found by the repair pass); a failed load is reported and retried;
// stop() leaves the table; off = the table removed.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { IPPool } from 'blockipam/core';
import {
  MasqueradeProgrammer,
  NftCommandError,
  reconcileMasquerade,
  removeMasquerade,
  type MasqueradeOutcome,
  type MasqueradeTable,
  type MasqueradeView,
  type MasqueradeWritten,
} from '../../../block-controller/agent/masquerade/index.ts';

/** A table in memory: `load` keeps the script's definition (what `nft list` would print). */
class MemoryTable implements MasqueradeTable {
  current: string | undefined;
  loads: string[] = [];
  lists = 0;
  failNextLoad = false;
  list(): Promise<string | undefined> {
    this.lists++;
    return Promise.resolve(this.current);
  }
  load(script: string): Promise<void> {
    if (this.failNextLoad) {
      this.failNextLoad = false;
      return Promise.reject(
        new NftCommandError('nft -f -: exit 1: Error: Could not process rule', ['nft', '-f', '-']),
      );
    }
    this.loads.push(script);
    const body = script.split('\n').slice(2).join('\n');
    this.current = /^table inet \S+ \{$/m.test(body) ? body : undefined;
    return Promise.resolve();
  }
  /** Someone else's hand: the table deleted, or a line added to it. */
  tamper(how: 'delete' | 'edit'): void {
    this.current = how === 'delete' ? undefined : `${this.current ?? ''}\n# edited`;
  }
}

const pool = (name: string, cidr: string): IPPool => ({ metadata: { name }, spec: { cidr } });
const view = (...pools: IPPool[]): MasqueradeView => ({ synced: true, pools });
type Done = Extract<MasqueradeOutcome, { status: 'unchanged' | 'written' }>;

describe('reconcileMasquerade', () => {
  test('not synced: waiting, the kernel is neither read nor written', async () => {
    const table = new MemoryTable();
    const { outcome } = await reconcileMasquerade(
      { synced: false, pools: [] },
      { table, nonMasquerade: [] },
      undefined,
    );
    assert.deepEqual(outcome, { status: 'waiting', why: 'not-synced' });
    assert.deepEqual([table.lists, table.loads.length], [0, 0]);
  });

  test('start, unchanged, pool added, deleted by hand, edited by hand', async () => {
    const table = new MemoryTable();
    const options = { table, nonMasquerade: [] };
    let last: MasqueradeWritten | undefined;
    const pass = async (v: MasqueradeView): Promise<Done> => {
      const r = await reconcileMasquerade(v, options, last);
      last = r.written;
      assert.notEqual(r.outcome.status, 'waiting');
      return r.outcome as Done;
    };
    const one = view(pool('a', '10.244.0.0/16'));
    // a process's first pass writes, whatever the table holds (a previous agent's rule)
    assert.deepEqual(await pass(one), {
      status: 'written',
      why: 'start',
      sources: 1,
      exempt: 1,
      skipped: [],
    });
    assert.match(table.current ?? '', /elements = \{ 10\.244\.0\.0\/16 \}/);
    // the same pools and the same table: no write
    assert.deepEqual(await pass(one), { status: 'unchanged', sources: 1, exempt: 1, skipped: [] });
    assert.equal(table.loads.length, 1);
    // a pool added: the whole rule set replaced in one load
    const two = view(pool('a', '10.244.0.0/16'), pool('b', 'fd00::/64'));
    assert.equal((await pass(two)).why, 'plan');
    assert.match(table.current ?? '', /pods6[\s\S]*fd00::\/64/);
    // deleted by hand: re-created
    table.tamper('delete');
    assert.equal((await pass(two)).why, 'drift');
    assert.ok(table.current);
    // a rule added to our table by hand: the table is written back as planned
    table.tamper('edit');
    assert.equal((await pass(two)).why, 'drift');
    assert.doesNotMatch(table.current ?? '', /edited/);
    assert.equal((await pass(two)).status, 'unchanged');
  });
});

describe('MasqueradeProgrammer', () => {
  test('a burst of updates is one write; nothing before the pools are listed', async () => {
    const table = new MemoryTable();
    const m = new MasqueradeProgrammer({ table, nonMasquerade: [], debounceMs: 60_000 });
    m.update({ synced: false, pools: [] });
    await m.flush();
    assert.equal(table.lists, 0);
    for (const cidr of ['10.1.0.0/16', '10.2.0.0/16', '10.3.0.0/16']) m.update(view(pool('a', cidr)));
    await m.flush();
    assert.equal(table.loads.length, 1);
    assert.match(table.current ?? '', /10\.3\.0\.0\/16/);
    await m.stop();
  });

  test('a failed load is reported and the next pass writes again', async () => {
    const table = new MemoryTable();
    const outcomes: string[] = [];
    const m = new MasqueradeProgrammer({
      table,
      nonMasquerade: [],
      debounceMs: 60_000,
      onPass: (o) => outcomes.push(o.status === 'written' ? `written:${o.why}` : o.status),
    });
    table.failNextLoad = true;
    m.update(view(pool('a', '10.244.0.0/16')));
    await m.flush();
    await m.flush();
    assert.deepEqual(outcomes, ['error', 'written:start']);
    await m.stop();
  });

  test('the repair pass re-creates a table deleted by hand', async () => {
    const table = new MemoryTable();
    let repaired: () => void = () => undefined;
    const seen = new Promise<void>((resolve) => (repaired = resolve));
    const m = new MasqueradeProgrammer({
      table,
      nonMasquerade: [],
      debounceMs: 60_000,
      resyncMs: 5,
      onPass: (o) => {
        if (o.status === 'written' && o.why === 'drift') repaired();
      },
    });
    m.update(view(pool('a', '10.244.0.0/16')));
    await m.flush();
    table.tamper('delete');
    await seen; // the event, not a time: the repair pass found the table gone and wrote it
    assert.ok(table.current);
    await m.stop();
  });

  test('stop() leaves the table; after it no pass runs', async () => {
    const table = new MemoryTable();
    const m = new MasqueradeProgrammer({ table, nonMasquerade: [], debounceMs: 60_000 });
    m.update(view(pool('a', '10.244.0.0/16')));
    await m.flush();
    await m.stop();
    const kept = table.current;
    m.update(view());
    await m.flush();
    assert.equal(table.current, kept);
    assert.equal(table.loads.length, 1);
  });

  test('off: removeMasquerade loads the create-then-delete script (no table left)', async () => {
    const table = new MemoryTable();
    table.current = 'table inet blockipam {\n}';
    await removeMasquerade(table);
    assert.equal(table.current, undefined);
    assert.deepEqual(table.loads, ['table inet blockipam {}\ndelete table inet blockipam\n']);
  });
});
