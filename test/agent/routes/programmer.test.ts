// The route loop with a fake table: nothing is read before a synced view, bursts of updates
// coalesce into one pass, and a failing pass is reported while the loop keeps going.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RouteProgrammer } from '../../../block-controller/agent/routes/index.ts';
import type {
  InstalledRoute,
  RouteChange,
  RouteTable,
  RouteView,
} from '../../../block-controller/agent/routes/index.ts';
import { block, node, pools, routeView } from './fixtures.ts';

/** An in-memory table counting its calls; `failNext` makes the next list() throw. */
class FakeTable implements RouteTable {
  lists = 0;
  applied: RouteChange[] = [];
  failNext: Error | undefined;
  list(): Promise<InstalledRoute[]> {
    this.lists += 1;
    const failure = this.failNext;
    this.failNext = undefined;
    return failure ? Promise.reject(failure) : Promise.resolve([]);
  }
  others(): Promise<InstalledRoute[]> {
    return Promise.resolve([]);
  }
  apply(changes: readonly RouteChange[]): Promise<{ change: RouteChange; error: string }[]> {
    this.applied.push(...changes);
    return Promise.resolve([]);
  }
}

const synced: RouteView = routeView(
  {
    blocks: [block('10.0.0.64/26', 'b')],
    nodes: [node('a', '192.0.2.11'), node('b', '192.0.2.12')],
    pools: pools('10.0.0.0/16'),
  },
  'a',
);

void describe('RouteProgrammer', () => {
  void it('reads nothing before a synced view; a burst of updates is one pass', async () => {
    const table = new FakeTable();
    const outcomes: string[] = [];
    const loop = new RouteProgrammer({ nodeName: 'a', table, onPass: (o) => outcomes.push(o.status) });
    try {
      loop.update({ ...synced, synced: false });
      await loop.flush();
      assert.equal(table.lists, 0);
      for (let i = 0; i < 20; i++) loop.update(synced);
      await loop.flush();
      assert.equal(table.lists, 1, 'twenty updates, one pass');
      assert.deepEqual(outcomes, ['waiting', 'done']);
      assert.deepEqual(
        table.applied.map((c) => `${c.op} ${c.route.dst}`),
        ['add 10.0.0.64/26'],
      );
    } finally {
      await loop.stop();
    }
  });

  void it('updates that change no route read nothing; one that does runs a pass; the timer always reads', async () => {
    const table = new FakeTable();
    const outcomes: string[] = [];
    const loop = new RouteProgrammer({
      nodeName: 'a',
      table,
      debounceMs: 0,
      onPass: (o) => outcomes.push(o.status),
    });
    const turns = async (done: () => boolean, what: string): Promise<void> => {
      for (let turn = 0; !done(); turn++) {
        if (turn > 10_000) assert.fail(`never happened: ${what}`);
        await new Promise((resolve) => setImmediate(resolve));
      }
    };
    try {
      loop.update(synced);
      await loop.flush();
      assert.equal(table.lists, 1);
      // a block of this node's whose allocations changed: the same routes
      loop.update({ ...synced, blocks: synced.blocks.map((b) => structuredClone(b)) });
      await turns(() => loop.unchangedPasses === 1, 'the unchanged pass');
      assert.equal(table.lists, 1);
      // node b's second block: a new route
      const more = routeView(
        {
          blocks: [block('10.0.0.64/26', 'b'), block('10.0.0.128/26', 'b')],
          nodes: [node('a', '192.0.2.11'), node('b', '192.0.2.12')],
          pools: pools('10.0.0.0/16'),
        },
        'a',
      );
      loop.update(more);
      await turns(() => outcomes.length === 2, 'the pass of the new route');
      assert.equal(table.lists, 2);
      assert.ok(
        table.applied.some((c) => c.op === 'add' && c.route.dst === '10.0.0.128/26'),
        'the new route added',
      );
      await loop.flush(); // forced (as the repair timer's): reads the kernel whatever the plan
      assert.equal(table.lists, 3);
      assert.equal(loop.unchangedPasses, 1);
    } finally {
      await loop.stop();
    }
  });

  void it('a pass that throws is reported as an error and the next pass runs', async () => {
    const table = new FakeTable();
    const outcomes: string[] = [];
    const warnings: string[] = [];
    const log = { info: () => undefined, warn: (m: string) => warnings.push(m) };
    const loop = new RouteProgrammer({ nodeName: 'a', table, log, onPass: (o) => outcomes.push(o.status) });
    try {
      loop.update(synced);
      table.failNext = new TypeError('unreadable object');
      await loop.flush();
      await loop.flush();
      assert.deepEqual(outcomes, ['error', 'done']);
      assert.deepEqual(warnings, ['route pass failed; the next pass retries']);
    } finally {
      await loop.stop();
    }
  });
});
