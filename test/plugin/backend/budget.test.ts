// The plugin's time budget reaches core (issue 9 item 10): once the budget's signal has fired,
// nothing more is written — ADD stops between its writes (a dual-stack ADD claiming blocks on
// a fresh node), DEL and GC write nothing. Before, the budget only raced the promise: the
// command failed at once while core went on writing in the background.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as tick } from 'node:timers/promises';
import { after, describe, it } from 'node:test';
import { MemoryDatastore, type IPPool } from 'blockipam/core';
import type { AddRequest } from '../../../ipam-plugin/backend/port.ts';
import { createCoreBackend } from '../../../ipam-plugin/backend/core-backend.ts';
import { parseNetConf } from '../../../ipam-plugin/cni/netconf.ts';

const tmp = mkdtempSync(join(tmpdir(), 'bipam-budget-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

const pool = (name: string, cidr: string): IPPool => ({
  apiVersion: 'ipam.blockipam.io/v1alpha1',
  kind: 'IPPool',
  metadata: { name, creationTimestamp: '2026-01-01T00:00:00Z' },
  spec: { cidr },
});

/** A memory store counting block writes; `onWrite` runs after each. */
function world(onWrite: () => void): { ds: MemoryDatastore; writes: () => number } {
  const ds = new MemoryDatastore({ pools: [pool('v4', '10.72.0.0/16'), pool('v6', 'fd00:72::/48')] });
  let writes = 0;
  for (const m of ['create', 'update', 'delete'] as const) {
    const f = (ds.blocks[m] as (...a: unknown[]) => Promise<unknown>).bind(ds.blocks);
    (ds.blocks as unknown as Record<string, unknown>)[m] = async (...a: unknown[]) => {
      const r = await f(...a);
      writes++;
      onWrite();
      return r;
    };
  }
  return { ds, writes: () => writes };
}

const conf = parseNetConf(
  JSON.stringify({
    cniVersion: '1.1.0',
    name: 'n',
    ipam: { type: 'blockipam', nodeName: 'node-1', assignIPv6: true, cacheDir: join(tmp, 'c') },
  }),
);

/** Lets any work core still has queued run to its end. */
async function settle(): Promise<void> {
  for (let i = 0; i < 200; i++) await tick();
}

void describe('time budget → core', () => {
  void it('an ADD whose budget fires after its first write writes nothing more', async () => {
    const budget = new AbortController();
    const { ds, writes } = world(() => budget.abort(new DOMException('budget', 'TimeoutError')));
    const backend = createCoreBackend({ ds, conf, cacheKey: 'a' });
    const req: AddRequest = {
      attachment: { network: 'n', containerID: 'c1', ifname: 'eth0' },
      node: 'node-1',
      families: [4, 6],
      pools: { 4: [], 6: [] },
      staticIPs: [],
      critical: (step) => step(budget.signal, false),
      lockFree: () => Promise.resolve(false),
    };
    await assert.rejects(backend.add(req), { name: 'TimeoutError' });
    await settle();
    assert.equal(writes(), 1, 'only the write before the budget fired (the IPv4 block claim)');
    const blocks = await ds.blocks.list();
    assert.deepEqual(
      blocks.map((b) => Object.keys(b.spec.allocations).length),
      [0],
      'the claimed IPv4 block holds no allocation; no IPv6 block',
    );
  });
  void it('DEL and GC with an expired budget write nothing', async () => {
    const { ds, writes } = world(() => undefined);
    const backend = createCoreBackend({ ds, conf, cacheKey: 'b' });
    const add = await backend.add({
      attachment: { network: 'n', containerID: 'c2', ifname: 'eth0' },
      node: 'node-1',
      families: [4],
      pools: { 4: [], 6: [] },
      staticIPs: [],
      critical: (step) => step(AbortSignal.timeout(10_000), false),
      lockFree: () => Promise.resolve(false),
    });
    assert.equal(add.kind, 'allocated');
    const before = writes();
    const expired = AbortSignal.abort(new DOMException('budget', 'TimeoutError'));
    const attachment = { network: 'n', containerID: 'c2', ifname: 'eth0' };
    await assert.rejects(backend.del({ attachment, node: 'node-1', signal: expired }), {
      name: 'TimeoutError',
    });
    await assert.rejects(
      backend.gc({ network: 'n', node: 'node-1', validAttachments: [], signal: expired }),
      {
        name: 'TimeoutError',
      },
    );
    await settle();
    assert.equal(writes(), before, 'nothing written after the budget expired');
  });
});
