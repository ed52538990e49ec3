// The controller's GC passes and frozen blocks (core/block/frozen.ts): being frozen is no reason to
// release a block's live allocations, unown it or delete it — passes past the leak grace period
// and the empty-block time leave the block, its affinity and its pod's address as they were —
// while a leaked address in it is released as anywhere (releases work in a frozen block).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { assignIP, freezesOf, MemoryDatastore } from 'blockipam/core';
import type { Pod } from 'blockipam/core';
import { controllerMetrics } from '../../block-controller/controller/metrics.ts';
import { Reconciler } from '../../block-controller/controller/reconciler.ts';
import { FREEZES, listedView, memoryLog, TestClock } from './helpers.ts';

const T0 = Date.parse('2026-12-03T09:00:00Z');

const POD: Pod = {
  metadata: { name: 'web', namespace: 'default', uid: 'uid-web' },
  spec: { nodeName: 'node-1' },
  status: { phase: 'Running', podIP: '10.73.0.5', podIPs: [{ ip: '10.73.0.5' }] },
};

void describe('controller: GC passes and frozen blocks', () => {
  for (const [reason, freeze] of FREEZES)
    void it(`${reason}: the live allocation stays, the leaked one goes, the block keeps its affinity`, async () => {
      const clock = new TestClock(T0);
      const ds = new MemoryDatastore(
        {
          pools: [
            {
              metadata: { name: 'p', creationTimestamp: '2026-11-01T00:00:00Z' },
              spec: { cidr: '10.73.0.0/16' },
            },
          ],
          configs: [
            {
              metadata: { name: 'default' },
              spec: { leakGracePeriodSeconds: 60, emptyBlockReleaseSeconds: 60 },
            },
          ],
          nodes: [{ metadata: { name: 'node-1' } }],
          namespaces: [{ metadata: { name: 'default' } }],
          pods: [POD],
        },
        { clock: clock.now },
      );
      // web's pod exists; gone's does not (a leak)
      for (const [name, address] of [
        ['web', '10.73.0.5'],
        ['gone', '10.73.0.6'],
      ] as const) {
        const got = await assignIP(
          ds,
          {
            handle: `net.${name}.eth0`,
            node: 'node-1',
            pod: { namespace: 'default', name, uid: `uid-${name}` },
            addresses: [address],
          },
          { clock: clock.now },
        );
        assert.ok(got.ok, JSON.stringify(got));
      }
      const block = structuredClone((await ds.blocks.get('10-73-0-0-26'))!);
      freeze(block);
      await ds.blocks.update(block);
      const r = new Reconciler({
        ds,
        view: { notReady: () => 'replaced per pass' } as never,
        log: memoryLog(),
        clock: clock.now,
        metrics: controllerMetrics(new Registry()),
        blockStatus: (b) => ds.blocks.updateStatus(b),
      });
      // the first pass sees the leak (a candidate for its grace period) and the block frozen
      const first = await r.pass({ view: await listedView(ds) });
      assert.deepEqual(first.trust?.frozen, ['10-73-0-0-26']);
      for (let pass = 0; pass < 2; pass++) {
        clock.advance(600);
        await r.pass({ view: await listedView(ds) });
      }
      const after = await ds.blocks.get('10-73-0-0-26');
      assert.ok(after, 'the block is not deleted');
      assert.equal(after.spec.affinity, 'node-1');
      assert.deepEqual(
        Object.values(after.spec.allocations).map((a) => a.handle),
        ['net.web.eth0'],
      );
      // the release of the leaked address repaired an unsafe sequence; other freezes stay
      assert.equal(freezesOf(after).length, reason === 'unsafe-sequence' ? 0 : 1);
    });
});
