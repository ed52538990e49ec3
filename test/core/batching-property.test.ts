// Property test (fast-check) of the batching decorator: random batches of concurrent ADDs and
// releases by handle, for two nodes on a small pool (claims, borrowing, exhaustion), while the
// server refuses some UPDATEs with 409 (a foreign write lands first) or fails them (unavailable),
// and some ADDs are aborted right after handing their change to the decorator. After every batch:
// every block invariant holds, and the stored allocations are exactly the model's — every
// answered ADD is there, every answered release is gone, every failed call changed nothing — and
// an aborted ADD whose change was not in an UPDATE sent before its abort is in no later UPDATE.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import {
  autoAssign,
  checkBlockInvariants,
  createBatchingDatastore,
  isUnavailable,
  releaseByHandle,
  UnavailableError,
  withBlocks,
} from 'blockipam/core';
import type { IPAMBlock } from 'blockipam/core';
import { probe } from './batching-probe.ts';
import { pool, world } from './fixtures.ts';

const NODES = ['n1', 'n2'];

/** What the runs exercised (the property must see batches and server conflicts). */
const seen = { batches: 0, serverConflicts: 0, failures: 0, dropped: 0 };

/** An ADD (`abort`: its signal fires right after it hands its first change to the decorator), or a release. */
type Op = { kind: 'auto'; node: number; abort: boolean } | { kind: 'release'; pick: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('auto' as const),
      node: fc.nat(1),
      abort: fc.constantFrom(false, false, true),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }) },
);

/** Which UPDATEs the server refuses: every `conflictEvery`-th meets a foreign write first, … */
const faults = fc.record({
  conflictEvery: fc.integer({ min: 2, max: 6 }),
  /** … and every `failEvery`-th fails unavailable (0: never). */
  failEvery: fc.constantFrom(0, 5, 9),
});

const ABORTED = 'test: the caller gave up';

/** Handles of a block's allocations. */
const handlesOf = (b: IPAMBlock): string[] => Object.values(b.spec.allocations).map((a) => a.handle);

it('random concurrent ADDs, releases and aborts with injected 409s and failures keep every answered change', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.array(op, { minLength: 1, maxLength: 12 }), { maxLength: 6 }),
      faults,
      async (batches, f) => {
        const w = world({ pools: [pool('small', { cidr: '10.50.0.0/26', blockSize: 28 })] });
        const p = probe(w.ds);
        let n = 0;
        p.foreignFirst = () => ++n % f.conflictEvery === 0;
        p.failWith = () =>
          f.failEvery > 0 && n % f.failEvery === 1 ? new UnavailableError('injected') : undefined;
        const bds = createBatchingDatastore(p.ds);
        /** Handles in any UPDATE sent so far; aborted handles that were not in one at their abort. */
        const sent = new Set<string>();
        const unsent = new Set<string>();
        /** Aborted handles sent before their abort: stored or not, as their UPDATE went. */
        const maybe = new Set<string>();
        const violations: string[] = [];
        p.onUpdate = (b) => {
          for (const h of handlesOf(b)) {
            sent.add(h);
            if (unsent.has(h)) violations.push(`${h} sent after its abort`);
          }
        };
        /** signal → the ADD's handle and controller, until its first change is handed over. */
        const armed = new Map<AbortSignal, { handle: string; controller: AbortController }>();
        const ds = withBlocks(bds, {
          get: (...a) => bds.blocks.get(...a),
          list: (...a) => bds.blocks.list(...a),
          listMetadata: (...a) => bds.blocks.listMetadata(...a),
          listPage: (...a) => bds.blocks.listPage(...a),
          create: (...a) => bds.blocks.create(...a),
          delete: (...a) => bds.blocks.delete(...a),
          update: (b, o) => {
            const written = bds.blocks.update(b, o);
            const caller = o?.signal && armed.get(o.signal);
            if (caller) {
              armed.delete(o.signal!);
              (sent.has(caller.handle) ? maybe : unsent).add(caller.handle);
              caller.controller.abort(new Error(ABORTED));
            }
            return written;
          },
        });
        const model = new Map<string, string>(); // handle → address
        let id = 0;
        for (const batch of batches) {
          const live = [...model.keys()];
          const picked = new Set<string>();
          await Promise.all(
            batch.map(async (o) => {
              if (o.kind === 'auto') {
                const handle = `net.c${id++}.eth0`;
                const controller = new AbortController();
                if (o.abort) armed.set(controller.signal, { handle, controller });
                const options = { ...w.options, signal: controller.signal };
                try {
                  const out = await autoAssign(ds, { handle, node: NODES[o.node]! }, options);
                  if (out.ok && out.ipv4) model.set(handle, out.ipv4.address);
                } catch (error) {
                  if (controller.signal.aborted) assert.equal((error as Error).message, ABORTED);
                  else assert.ok(isUnavailable(error), String(error));
                  seen.failures += 1;
                } finally {
                  armed.delete(controller.signal);
                }
                return;
              }
              const handle = live[o.pick % Math.max(1, live.length)];
              if (handle === undefined || picked.has(handle)) return;
              picked.add(handle);
              try {
                const done = await releaseByHandle(ds, handle, {}, w.options);
                assert.equal(done.released.length, 1);
                model.delete(handle);
              } catch (error) {
                assert.ok(isUnavailable(error), String(error));
                seen.failures += 1;
              }
            }),
          );
          const blocks = await w.ds.blocks.list();
          assert.deepEqual(
            blocks.flatMap((b) => checkBlockInvariants(b, { nowMs: w.now.ms })),
            [],
          );
          const stored = new Map<string, string>();
          for (const b of blocks)
            for (const [ordinal, a] of Object.entries(b.spec.allocations)) {
              assert.equal(stored.has(a.handle), false, `handle ${a.handle} twice`);
              const base = b.spec.cidr.split('/')[0]!.split('.').map(Number);
              stored.set(a.handle, `10.50.0.${base[3]! + Number(ordinal)}`);
            }
          for (const h of maybe) stored.delete(h);
          assert.deepEqual(new Map([...stored].sort()), new Map([...model].sort()));
          assert.deepEqual(violations, []);
        }
        const s = bds.stats();
        seen.batches += s.batches;
        seen.serverConflicts += s.serverConflicts;
        seen.dropped += s.changesAborted;
      },
    ),
    { numRuns: 60 },
  );
  assert.ok(
    seen.batches > 0 && seen.serverConflicts > 0 && seen.failures > 0 && seen.dropped > 0,
    JSON.stringify(seen),
  );
  console.log(`# exercised: ${JSON.stringify(seen)}`);
});
