// Cancellation on the real API server: an AbortSignal in the allocator's options stops every
// write after it fires — a release over several blocks aborted after its first write, and a
// dual-stack allocation aborted after its IPv4 write, leave nothing written after the abort.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, beforeEach, describe, it } from 'node:test';
import { autoAssign, findByHandle, releaseAddresses, withBlocks } from 'blockipam/core';
import type { IPAMBlock, IPPool, ResourceStore } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { adminDatastore, wipeBlockipam } from '../helpers/crds.ts';

const ds: KubeDatastore = adminDatastore();
beforeEach(() => wipeBlockipam(ds));
after(async () => {
  await wipeBlockipam(ds);
  ds.close();
});

const pool = (name: string, spec: IPPool['spec']): IPPool => ({ metadata: { name }, spec });
const req = (id: string) => ({
  handle: `k8s-pod-network.${id}.eth0`,
  node: 'node-1',
  pod: { namespace: 'default', name: id, uid: `uid-${id}` },
  nodeLabels: {},
  namespaceLabels: {},
});

/**
 * `inner`, except that the first successful block write (UPDATE or CREATE) fires `controller`
 * right after it returns — the budget expiring mid-operation. Counts block writes attempted.
 */
function abortingAfterFirstWrite(inner: KubeDatastore, controller: AbortController) {
  const writes = { attempted: 0 };
  const fire = <T>(r: T): T => {
    controller.abort(new Error('budget expired'));
    return r;
  };
  const blocks: ResourceStore<IPAMBlock> = {
    get: (name, o) => inner.blocks.get(name, o),
    list: (o) => inner.blocks.list(o),
    listMetadata: (o) => inner.blocks.listMetadata(o),
    listPage: (o) => inner.blocks.listPage(o),
    create: async (b, o) => (writes.attempted++, fire(await inner.blocks.create(b, o))),
    update: async (b, o) => (writes.attempted++, fire(await inner.blocks.update(b, o))),
    delete: async (n, p, o) => (writes.attempted++, fire(await inner.blocks.delete(n, p, o))),
  };
  const view = withBlocks(inner, blocks);
  return { view, writes };
}

const versions = async (): Promise<Record<string, string>> =>
  Object.fromEntries(
    (await ds.blocks.list()).map((b) => [b.metadata.name, b.metadata.resourceVersion ?? '']),
  );

describe('AbortSignal through the allocator (kube-apiserver)', () => {
  it('a release over three blocks aborted after its first write: the other two blocks are not written', async () => {
    // /30 blocks hold one pod each: three pods, three blocks
    await ds.pools.create(pool('p', { cidr: '10.90.0.0/24', blockSize: 30 }));
    const items = [];
    for (const id of ['a', 'b', 'c']) {
      const got = await autoAssign(ds, req(id));
      assert.ok(got.ok && got.ipv4);
      items.push({ address: got.ipv4.address, handle: req(id).handle, sequence: got.ipv4.sequence });
    }
    const before = await versions();
    assert.equal(Object.keys(before).length, 3);
    const controller = new AbortController();
    const { view, writes } = abortingAfterFirstWrite(ds, controller);
    await assert.rejects(releaseAddresses(view, items, { node: 'node-1' }, { signal: controller.signal }), {
      message: 'budget expired',
    });
    assert.equal(writes.attempted, 1, 'no write attempted after the abort');
    await sleep(200); // a write abandoned client-side would have landed by now
    const afterAbort = await versions();
    const changed = Object.keys(before).filter((name) => afterAbort[name] !== before[name]);
    assert.equal(changed.length, 1, `exactly the first block was written: ${JSON.stringify(changed)}`);
    const held = await Promise.all(['a', 'b', 'c'].map((id) => findByHandle(ds, req(id).handle)));
    assert.deepEqual(held.map((h) => h.length).sort(), [0, 1, 1]);
  });

  it('a dual-stack allocation aborted after its IPv4 write: no IPv6 write, no rollback write', async () => {
    await ds.pools.create(pool('v4', { cidr: '10.91.0.0/24', blockSize: 26 }));
    await ds.pools.create(pool('v6', { cidr: 'fd00:91::/112', blockSize: 122 }));
    assert.ok(
      (await autoAssign(ds, { ...req('warm'), ipv6: true })).ok,
      'the node has a block of each family',
    );
    const before = await versions();
    const controller = new AbortController();
    const { view, writes } = abortingAfterFirstWrite(ds, controller);
    await assert.rejects(autoAssign(view, { ...req('d'), ipv6: true }, { signal: controller.signal }), {
      message: 'budget expired',
    });
    assert.equal(writes.attempted, 1, 'the IPv4 UPDATE only');
    await sleep(200);
    const afterAbort = await versions();
    const v6 = Object.keys(before).find((name) => name.startsWith('fd00'));
    assert.ok(v6);
    assert.equal(afterAbort[v6], before[v6], 'the IPv6 block is not written (no allocation, no rollback)');
    // the IPv4 address stays (the runtime's DEL after the failed ADD releases it)
    assert.deepEqual(
      (await findByHandle(ds, req('d').handle)).map((a) => a.family),
      [4],
    );
  });

  it('a signal that has already fired: nothing is sent', async () => {
    await ds.pools.create(pool('p', { cidr: '10.92.0.0/24' }));
    const sent = ds.transport.stats.requests;
    await assert.rejects(autoAssign(ds, req('x'), { signal: AbortSignal.abort(new Error('late')) }), {
      message: 'late',
    });
    assert.equal(ds.transport.stats.requests, sent);
    assert.deepEqual(await ds.blocks.list(), []);
  });
});
