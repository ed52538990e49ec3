// Combining (ipam-plugin/backend/combine.ts; docs/design-plugin.md §Host lock, "Combining") over
// the memory datastore, through the backend as the plugin runs it: ADDs that queued for the lock
// are allocated by the holder together — one UPDATE for the lot, distinct addresses, each waiter
// answered with its own; a flush that loses its compare-and-swap serves nobody and the waiters
// decide themselves; lockQueue false queues nothing.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { findByHandle, MemoryDatastore, type IPPool } from 'blockipam/core';
import type { AddOutcome, AddRequest } from '../../../ipam-plugin/backend/port.ts';
import { createCoreBackend } from '../../../ipam-plugin/backend/core-backend.ts';
import { parseNetConf, type NetConf } from '../../../ipam-plugin/cni/netconf.ts';

const tmp = mkdtempSync(join(tmpdir(), 'bipam-combine-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

const pool: IPPool = {
  apiVersion: 'ipam.blockipam.io/v1alpha1',
  kind: 'IPPool',
  metadata: { name: 'p4', creationTimestamp: '2026-01-01T00:00:00Z' },
  spec: { cidr: '10.73.0.0/16', blockSize: 26 },
};

/** A memory store counting block UPDATEs. */
function world(): { ds: MemoryDatastore; updates: () => number } {
  const ds = new MemoryDatastore({ pools: [pool] });
  let updates = 0;
  const update = ds.blocks.update.bind(ds.blocks);
  ds.blocks.update = async (b, o) => {
    updates++;
    return update(b, o);
  };
  return { ds, updates: () => updates };
}

let n = 0;
function confOf(extra: Record<string, unknown> = {}): NetConf {
  return parseNetConf(
    JSON.stringify({
      cniVersion: '1.1.0',
      name: 'n',
      ipam: { type: 'blockipam', nodeName: 'node-1', cacheDir: join(tmp, `c${++n}`), ...extra },
    }),
  );
}

/** An in-process host lock: what the plugin's flock serialises between processes. */
function hostLock(): { hold(): () => void; critical: AddRequest['critical'] } {
  let tail = Promise.resolve();
  let held = false;
  const acquire = async (beforeWait?: () => void): Promise<{ waited: boolean; release: () => void }> => {
    const waited = held;
    if (waited) beforeWait?.();
    const prev = tail;
    let release: () => void = () => undefined;
    tail = new Promise<void>((r) => (release = r));
    await prev;
    held = true;
    return {
      waited,
      release: () => {
        held = false;
        release();
      },
    };
  };
  return {
    hold() {
      held = true;
      let release: () => void = () => undefined;
      const prev = tail;
      tail = prev.then(() => new Promise<void>((r) => (release = r)));
      return () => {
        held = false;
        release();
      };
    },
    critical: async (step, beforeWait) => {
      const l = await acquire(beforeWait);
      try {
        return await step(AbortSignal.timeout(10_000), l.waited);
      } finally {
        l.release();
      }
    },
  };
}

function req(id: string, critical: AddRequest['critical']): AddRequest {
  return {
    attachment: { network: 'n', containerID: id, ifname: 'eth0' },
    node: 'node-1',
    families: [4],
    pools: { 4: [], 6: [] },
    staticIPs: [],
    critical,
    lockFree: () => Promise.resolve(false),
  };
}

const addressOf = (o: AddOutcome): string => (o.kind === 'allocated' ? (o.ips[0]?.address ?? '') : o.kind);

/** `ids` ADDs queued behind a held lock, released once all have queued. */
async function burst(
  ds: MemoryDatastore,
  conf: NetConf,
  ids: readonly string[],
): Promise<{ outcomes: AddOutcome[]; stats: Record<string, unknown>[] }> {
  const lock = hostLock();
  const release = lock.hold();
  const backends = ids.map(() => createCoreBackend({ ds, conf, cacheKey: 'k' }));
  const runs = ids.map((id, i) => backends[i]!.add(req(id, lock.critical)));
  await new Promise((r) => setTimeout(r, 50)); // every ADD has read its inputs and queued
  release();
  const outcomes = await Promise.all(runs);
  return { outcomes, stats: backends.map((b) => b.stats?.() ?? {}) };
}

void describe('combining queued ADDs', () => {
  void it('10 queued ADDs: the first allocates itself, then serves 9 with one UPDATE', async () => {
    const { ds, updates } = world();
    const conf = confOf();
    await createCoreBackend({ ds, conf, cacheKey: 'k' }).add(req('warm', hostLock().critical)); // claims
    const before = updates();
    const ids = Array.from({ length: 10 }, (_, i) => `c${i}`);
    const { outcomes, stats } = await burst(ds, conf, ids);
    assert.deepEqual(
      outcomes.map((o) => o.kind),
      ids.map(() => 'allocated'),
    );
    assert.equal(new Set(outcomes.map(addressOf)).size, 10, 'distinct addresses');
    assert.equal(updates() - before, 2, 'the holder’s own UPDATE and one for the 9 it served');
    assert.equal(stats.filter((s) => s.lockQueue === 'served').length, 9);
    assert.deepEqual(
      stats.filter((s) => s.queueTaken !== undefined).map((s) => [s.queueTaken, s.queueServed]),
      [[9, 9]],
    );
    // each waiter's answer is the address recorded for its own handle
    for (const [i, id] of ids.entries()) {
      const found = await findByHandle(ds, `n.${id}.eth0`, { node: 'node-1' });
      assert.deepEqual(
        found.map((f) => `${f.address}/${f.prefixLength}`),
        [addressOf(outcomes[i]!)],
        id,
      );
    }
    assert.deepEqual(readdirSync(`${conf.lockFile}.queue`), [], 'no queue file left');
  });

  void it('a combined write that loses its compare-and-swap serves nobody: each waiter decides itself', async () => {
    const { ds, updates } = world();
    const conf = confOf();
    await createCoreBackend({ ds, conf, cacheKey: 'k' }).add(req('warm', hostLock().critical));
    // the burst's second UPDATE (the holder's combined write) meets a block another writer
    // changed since the holder's own write
    let seen = 0;
    const update = ds.blocks.update.bind(ds.blocks);
    ds.blocks.update = async (b, o) => {
      if (++seen === 2) {
        const current = (await ds.blocks.get(b.metadata.name))!;
        current.metadata.labels = { ...current.metadata.labels, foreign: 'write' };
        await update(current);
      }
      return update(b, o);
    };
    const before = updates();
    const ids = ['d0', 'd1', 'd2', 'd3'];
    const { outcomes, stats } = await burst(ds, conf, ids);
    assert.deepEqual(
      outcomes.map((o) => o.kind),
      ids.map(() => 'allocated'),
    );
    assert.equal(new Set(outcomes.map(addressOf)).size, 4, 'distinct addresses');
    assert.deepEqual(
      stats
        .filter((s) => s.queueTaken !== undefined)
        .map((s) => [s.queueTaken, s.queueServed, s.queueFlushFailed]),
      [[3, 0, 1]],
    );
    assert.equal(stats.filter((s) => s.lockQueue === 'notServed').length, 3);
    for (const [i, id] of ids.entries()) {
      const found = await findByHandle(ds, `n.${id}.eth0`, { node: 'node-1' });
      assert.deepEqual(
        found.map((f) => `${f.address}/${f.prefixLength}`),
        [addressOf(outcomes[i]!)],
        id,
      );
    }
    assert.ok(updates() - before >= 4);
  });

  void it('lockQueue false: every waiter allocates itself, one UPDATE each', async () => {
    const { ds, updates } = world();
    const conf = confOf({ lockQueue: false });
    await createCoreBackend({ ds, conf, cacheKey: 'k' }).add(req('warm', hostLock().critical));
    const before = updates();
    const ids = ['e0', 'e1', 'e2', 'e3'];
    const { outcomes, stats } = await burst(ds, conf, ids);
    assert.equal(new Set(outcomes.map(addressOf)).size, 4);
    assert.equal(updates() - before, 4);
    assert.equal(stats.filter((s) => s.lockQueue !== undefined || s.queueTaken !== undefined).length, 0);
  });
});
