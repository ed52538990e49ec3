/**
 * The Datastore contract suite: ONE set of cases run against every implementation (memory in
 * test/core/memory-contract.test.ts, the real kube-apiserver in
 * test/core/kube-contract.int.test.ts), so the memory store provably behaves like the API
 * server: create / get / list by label / update with resourceVersion / delete with preconditions,
 * NotFound, AlreadyExists, Conflict, status subresource.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isAlreadyExists, isConflict, isNotFound, mustParseCidr, newBlock } from 'blockipam/core';
import type { Datastore, IPAMBlock, IPPool } from 'blockipam/core';

/** What a factory gives the suite. `cleanup` removes what the suite created. */
export interface ContractSubject {
  ds: Datastore;
  cleanup(): Promise<void>;
}

const NOW = Date.parse('2026-11-29T08:00:00Z');

function block(cidr: string, labels: Record<string, string> = {}): IPAMBlock {
  const b = newBlock({ cidr: mustParseCidr(cidr), pool: 'contract', node: 'node-a', nowMs: NOW });
  b.metadata.labels = { ...b.metadata.labels, ...labels };
  return b;
}

function pool(name: string, cidr: string): IPPool {
  return {
    apiVersion: 'ipam.blockipam.io/v1alpha1',
    kind: 'IPPool',
    metadata: { name },
    spec: { cidr, blockSize: 26 },
    status: { allocated: 5 },
  };
}

/** Registers the suite under `title` for the datastore `make()` returns. */
export function datastoreContract(title: string, make: () => Promise<ContractSubject>): void {
  describe(`Datastore contract: ${title}`, () => {
    let subject: ContractSubject;
    let ds: Datastore;
    before(async () => {
      subject = await make();
      ds = subject.ds;
    });
    after(async () => subject.cleanup());

    it('create sets uid, resourceVersion, creationTimestamp; get returns the stored object', async () => {
      const created = await ds.blocks.create(block('10.200.0.0/26'));
      assert.ok(
        created.metadata.uid && created.metadata.resourceVersion && created.metadata.creationTimestamp,
      );
      const got = await ds.blocks.get('10-200-0-0-26');
      assert.equal(got?.metadata.uid, created.metadata.uid);
      assert.equal(got?.metadata.resourceVersion, created.metadata.resourceVersion);
      assert.deepEqual(got?.spec, created.spec);
    });

    it('get of a missing object is undefined (not an error)', async () => {
      assert.equal(await ds.blocks.get('10-200-255-0-26'), undefined);
    });

    it('create of an existing name throws AlreadyExists', async () => {
      await assert.rejects(ds.blocks.create(block('10.200.0.0/26')), isAlreadyExists);
    });

    it('list filters by label selector (matchLabels, Exists, DoesNotExist, In, NotIn) and sorts by name', async () => {
      await ds.blocks.create(block('10.200.0.128/26', { 'contract.test/color': 'red' }));
      await ds.blocks.create(block('10.200.0.64/26', { 'contract.test/color': 'blue' }));
      const names = async (labelSelector: Parameters<Datastore['blocks']['list']>[0]): Promise<string[]> =>
        (await ds.blocks.list(labelSelector)).map((b) => b.metadata.name);
      const pool = { 'ipam.blockipam.io/pool': 'contract' };
      assert.deepEqual(await names({ labelSelector: { matchLabels: pool } }), [
        '10-200-0-0-26',
        '10-200-0-128-26',
        '10-200-0-64-26',
      ]);
      assert.deepEqual(
        await names({ labelSelector: { matchLabels: { ...pool, 'contract.test/color': 'red' } } }),
        ['10-200-0-128-26'],
      );
      assert.deepEqual(
        await names({
          labelSelector: {
            matchLabels: pool,
            matchExpressions: [{ key: 'contract.test/color', operator: 'Exists' }],
          },
        }),
        ['10-200-0-128-26', '10-200-0-64-26'],
      );
      assert.deepEqual(
        await names({
          labelSelector: {
            matchLabels: pool,
            matchExpressions: [{ key: 'contract.test/color', operator: 'DoesNotExist' }],
          },
        }),
        ['10-200-0-0-26'],
      );
      assert.deepEqual(
        await names({
          labelSelector: {
            matchExpressions: [{ key: 'contract.test/color', operator: 'In', values: ['blue', 'green'] }],
          },
        }),
        ['10-200-0-64-26'],
      );
      assert.deepEqual(
        await names({
          labelSelector: {
            matchLabels: pool,
            matchExpressions: [{ key: 'contract.test/color', operator: 'NotIn', values: ['blue'] }],
          },
        }),
        ['10-200-0-0-26', '10-200-0-128-26'],
      );
      const metas = await ds.blocks.listMetadata({
        labelSelector: { matchLabels: { 'contract.test/color': 'red' } },
      });
      assert.deepEqual(
        metas.map((m) => [m.name, m.labels?.['contract.test/color']]),
        [['10-200-0-128-26', 'red']],
      );
    });

    it('a cached list (watch cache as it is) returns the same objects once the cache has caught up', async () => {
      const selector = { labelSelector: { matchLabels: { 'contract.test/color': 'red' } } };
      const want = (await ds.blocks.list(selector)).map((b) => b.metadata.name);
      // The watch cache lags by milliseconds: poll for up to 5 s (a bound, not a benchmark).
      let got: string[] = [];
      for (let i = 0; i < 50; i++) {
        got = (await ds.blocks.list({ ...selector, cached: true })).map((b) => b.metadata.name);
        if (JSON.stringify(got) === JSON.stringify(want)) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.deepEqual(got, want);
      assert.deepEqual(
        (await ds.blocks.listMetadata({ ...selector, cached: true })).map((m) => m.name),
        want,
      );
    });

    it('update with the current resourceVersion succeeds and changes it; a stale one throws Conflict', async () => {
      const current = await ds.blocks.get('10-200-0-0-26');
      assert.ok(current);
      const updated = await ds.blocks.update({
        ...current,
        spec: { ...current.spec, sequence: current.spec.sequence + 1 },
      });
      assert.notEqual(updated.metadata.resourceVersion, current.metadata.resourceVersion);
      assert.equal(updated.spec.sequence, current.spec.sequence + 1);
      await assert.rejects(
        ds.blocks.update({ ...current, spec: { ...current.spec, sequence: current.spec.sequence + 2 } }),
        isConflict,
      );
      assert.equal((await ds.blocks.get('10-200-0-0-26'))?.spec.sequence, current.spec.sequence + 1);
    });

    it('two concurrent updates from the same resourceVersion: exactly one wins', async () => {
      const current = await ds.blocks.get('10-200-0-64-26');
      assert.ok(current);
      const results = await Promise.allSettled(
        [1, 2].map((n) =>
          ds.blocks.update({ ...current, spec: { ...current.spec, sequence: current.spec.sequence + n } }),
        ),
      );
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
      const lost = results.find((r) => r.status === 'rejected');
      assert.ok(lost && isConflict(lost.reason));
    });

    it('an update that changes nothing keeps the resourceVersion', async () => {
      const current = await ds.blocks.get('10-200-0-64-26');
      assert.ok(current);
      const same = await ds.blocks.update(current);
      assert.equal(same.metadata.resourceVersion, current.metadata.resourceVersion);
    });

    it('update and delete of a missing object throw NotFound', async () => {
      const ghost = block('10.200.1.0/26');
      await assert.rejects(
        ds.blocks.update({ ...ghost, metadata: { ...ghost.metadata, resourceVersion: '1' } }),
        isNotFound,
      );
      await assert.rejects(ds.blocks.delete('10-200-1-0-26'), isNotFound);
    });

    it('delete with a stale resourceVersion or another uid throws Conflict and keeps the object', async () => {
      const current = await ds.blocks.get('10-200-0-128-26');
      assert.ok(current);
      await ds.blocks.update({ ...current, spec: { ...current.spec, sequence: current.spec.sequence + 1 } });
      await assert.rejects(
        ds.blocks.delete(current.metadata.name, { resourceVersion: current.metadata.resourceVersion }),
        isConflict,
      );
      await assert.rejects(
        ds.blocks.delete(current.metadata.name, { uid: '00000000-0000-0000-0000-000000000000' }),
        isConflict,
      );
      assert.ok(await ds.blocks.get(current.metadata.name));
    });

    it('delete with matching preconditions removes the object', async () => {
      const current = await ds.blocks.get('10-200-0-128-26');
      assert.ok(current);
      await ds.blocks.delete(current.metadata.name, {
        resourceVersion: current.metadata.resourceVersion,
        uid: current.metadata.uid,
      });
      assert.equal(await ds.blocks.get(current.metadata.name), undefined);
    });

    it('a call whose signal has fired rejects with its reason and changes nothing', async () => {
      const fired = AbortSignal.abort(new Error('budget expired'));
      const reason = { message: 'budget expired' };
      const current = await ds.blocks.get('10-200-0-0-26');
      assert.ok(current);
      await assert.rejects(ds.blocks.create(block('10.200.9.0/26'), { signal: fired }), reason);
      await assert.rejects(ds.blocks.update({ ...current }, { signal: fired }), reason);
      await assert.rejects(ds.blocks.delete(current.metadata.name, {}, { signal: fired }), reason);
      await assert.rejects(ds.blocks.get(current.metadata.name, { signal: fired }), reason);
      await assert.rejects(ds.blocks.list({ signal: fired }), reason);
      await assert.rejects(ds.getNode('node-a', { signal: fired }), reason);
      assert.equal(await ds.blocks.get('10-200-9-0-26'), undefined);
      assert.equal(
        (await ds.blocks.get(current.metadata.name))?.metadata.resourceVersion,
        current.metadata.resourceVersion,
      );
    });

    it('an update carrying the uid of a deleted-and-recreated object throws Conflict', async () => {
      const old = await ds.blocks.get('10-200-0-0-26');
      assert.ok(old);
      await ds.blocks.delete(old.metadata.name);
      const fresh = await ds.blocks.create(block('10.200.0.0/26'));
      await assert.rejects(
        ds.blocks.update({
          ...old,
          metadata: { ...old.metadata, resourceVersion: fresh.metadata.resourceVersion },
        }),
        isConflict,
      );
    });

    it('pools: status is dropped on create, kept by update, and written only by updateStatus', async () => {
      const created = await ds.pools.create(pool('contract-pool', '10.201.0.0/16'));
      assert.equal(created.status?.allocated, undefined);
      const withStatus = await ds.pools.updateStatus({
        ...created,
        status: { allocated: 7 },
        spec: { ...created.spec, disabled: true },
      });
      assert.equal(withStatus.status?.allocated, 7);
      assert.notEqual(withStatus.spec.disabled, true);
      const updated = await ds.pools.update({
        ...withStatus,
        status: { allocated: 1 },
        spec: { ...withStatus.spec, disabled: true },
      });
      assert.equal(updated.spec.disabled, true);
      assert.equal(updated.status?.allocated, 7);
      await assert.rejects(ds.pools.updateStatus({ ...created, status: { allocated: 9 } }), isConflict);
    });
  });
}
