/**
 * The Datastore contract suite: ONE set of cases run against every implementation (memory in
 * test/core/memory-contract.test.ts, the real kube-apiserver in
 * test/core/kube-contract.int.test.ts), so the memory store provably behaves like the API
 * server: create / get / list by label / update with resourceVersion / delete with preconditions,
 * NotFound, AlreadyExists, Conflict, status subresource, paged LISTs (limit / continue: one
 * consistent view at the first page's resourceVersion, Expired after compaction), the pod field
 * selectors.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { randomBytes } from 'node:crypto';
import {
  isAlreadyExists,
  isConflict,
  isExpired,
  isInvalid,
  isNotFound,
  listAll,
  mustParseCidr,
  newBlock,
} from 'blockipam/core';
import type {
  BlockStatusDatastore,
  Datastore,
  IPAMBlock,
  IPPool,
  Namespace,
  Node,
  Page,
  PageOptions,
  Pod,
} from 'blockipam/core';

/** What a factory gives the suite. `cleanup` removes what the suite created. */
export interface ContractSubject {
  ds: BlockStatusDatastore;
  /**
   * Expires the continue tokens handed out so far, as etcd compaction does (the memory store:
   * `compact()`; the API server: an etcd compaction past the tokens' revision). The API server
   * keeps serving a token from its watch cache's snapshot while that snapshot is still the
   * kind's newest state, so a caller writes the kind after taking the token and before this.
   */
  compact(): Promise<void>;
  cleanup(): Promise<void>;
}

/** Built-in objects the subject must hold (memory: seeded; API server: created). */
export interface ContractWorld {
  namespaces: Namespace[];
  nodes: Node[];
  pods: Pod[];
}

/** Label on every object of the world, so a LIST can leave out what other tests created. */
const WORLD_LABEL = 'contract.test/world';

/**
 * Two nodes, two namespaces, four pods (three with an IP). Names carry a random suffix: the API
 * server's namespaces cannot be deleted to completion here (no controller manager).
 */
function contractWorld(): ContractWorld {
  const id = randomBytes(3).toString('hex');
  const labels = { [WORLD_LABEL]: id };
  const meta = (name: string, namespace?: string) => ({ name, ...(namespace ? { namespace } : {}), labels });
  const pod = (namespace: string, name: string, node: string, ip?: string): Pod => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: meta(name, namespace),
    spec: { nodeName: node },
    ...(ip ? { status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] } } : {}),
  });
  const [nsA, nsB, nodeA, nodeB] = [`cpa-${id}`, `cpb-${id}`, `cn-a-${id}`, `cn-b-${id}`];
  return {
    namespaces: [nsA, nsB].map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: meta(name) })),
    nodes: [nodeB, nodeA].map((name) => ({ apiVersion: 'v1', kind: 'Node', metadata: meta(name) })),
    pods: [
      pod(nsB, 'p1', nodeA, '10.211.0.3'),
      pod(nsA, 'p2', nodeB, '10.211.0.2'),
      pod(nsA, 'p1', nodeA, '10.211.0.1'),
      pod(nsB, 'p0', nodeB),
    ],
  };
}

/** Every page of a LIST by hand: the pages, their resourceVersions, and a hook after page 1. */
async function pages<T>(
  listPage: (options: PageOptions) => Promise<Page<T>>,
  options: PageOptions,
  afterFirst?: () => Promise<void>,
): Promise<Page<T>[]> {
  const out: Page<T>[] = [];
  let token: string | undefined;
  do {
    const page = await listPage({ ...options, ...(token ? { continue: token } : {}) });
    out.push(page);
    if (out.length === 1) await afterFirst?.();
    token = page.continue;
  } while (token);
  return out;
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
export function datastoreContract(
  title: string,
  make: (world: ContractWorld) => Promise<ContractSubject>,
): void {
  describe(`Datastore contract: ${title}`, () => {
    let subject: ContractSubject;
    let ds: BlockStatusDatastore;
    const world = contractWorld();
    const worldId = world.nodes[0]?.metadata.labels?.[WORLD_LABEL] ?? '';
    const inWorld = { matchLabels: { [WORLD_LABEL]: worldId } };
    const podKey = (p: Pod): string => `${p.metadata.namespace ?? ''}/${p.metadata.name}`;
    before(async () => {
      subject = await make(world);
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
      const color = 'contract.test/color';
      const cases: [Parameters<Datastore['blocks']['list']>[0], string[]][] = [
        [{ labelSelector: { matchLabels: pool } }, ['10-200-0-0-26', '10-200-0-128-26', '10-200-0-64-26']],
        [{ labelSelector: { matchLabels: { ...pool, [color]: 'red' } } }, ['10-200-0-128-26']],
        [
          { labelSelector: { matchLabels: pool, matchExpressions: [{ key: color, operator: 'Exists' }] } },
          ['10-200-0-128-26', '10-200-0-64-26'],
        ],
        [
          {
            labelSelector: {
              matchLabels: pool,
              matchExpressions: [{ key: color, operator: 'DoesNotExist' }],
            },
          },
          ['10-200-0-0-26'],
        ],
        [
          {
            labelSelector: { matchExpressions: [{ key: color, operator: 'In', values: ['blue', 'green'] }] },
          },
          ['10-200-0-64-26'],
        ],
        [
          {
            labelSelector: {
              matchLabels: pool,
              matchExpressions: [{ key: color, operator: 'NotIn', values: ['blue'] }],
            },
          },
          ['10-200-0-0-26', '10-200-0-128-26'],
        ],
      ];
      for (const [selector, want] of cases)
        assert.deepEqual(await names(selector), want, JSON.stringify(selector));
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

    it("blocks: status is dropped on create, kept by the allocator's update, written only by updateStatus", async () => {
      // the controller's Trusted condition must survive every compare-and-swap UPDATE of the block
      const created = await ds.blocks.create({
        ...block('10.202.0.0/26'),
        status: { conditions: [{ type: 'Trusted', status: 'False', reason: 'Forged' }] },
      });
      assert.equal(created.status, undefined);
      const trusted = {
        type: 'Trusted',
        status: 'False' as const,
        reason: 'SizeMismatch',
        message: 'a test',
        lastTransitionTime: '2026-12-03T08:00:00Z',
        observedGeneration: created.metadata.generation ?? 1,
      };
      const flagged = await ds.blocks.updateStatus({
        ...created,
        spec: { ...created.spec, affinity: 'node-z' },
        status: { conditions: [trusted] },
      });
      assert.deepEqual(flagged.status?.conditions, [trusted]);
      assert.equal(flagged.spec.affinity, 'node-a', 'updateStatus leaves the spec as stored');
      const updated = await ds.blocks.update({
        ...flagged,
        spec: { ...flagged.spec, affinity: 'node-b' },
        status: {},
      });
      assert.equal(updated.spec.affinity, 'node-b');
      assert.deepEqual(updated.status?.conditions, [trusted], 'an UPDATE leaves the status as stored');
      const { status: _dropped, ...withoutStatus } = updated;
      const again = await ds.blocks.update({
        ...withoutStatus,
        spec: { ...updated.spec, affinity: 'node-c' },
      });
      assert.deepEqual(again.status?.conditions, [trusted], 'also when the object carries no status');
      await assert.rejects(ds.blocks.updateStatus({ ...created, status: {} }), isConflict);
    });

    it('a paged LIST: pages of at most `limit`, one resourceVersion, together the whole LIST in name order', async () => {
      const paged = { 'contract.test/paged': 'yes' };
      for (const cidr of [
        '10.210.0.0/26',
        '10.210.0.64/26',
        '10.210.0.128/26',
        '10.210.0.192/26',
        '10.210.1.0/26',
      ])
        await ds.blocks.create(block(cidr, paged));
      const selector = { matchLabels: paged };
      const all = (await ds.blocks.list({ labelSelector: selector })).map((b) => b.metadata.name);
      assert.deepEqual(all, [
        '10-210-0-0-26',
        '10-210-0-128-26',
        '10-210-0-192-26',
        '10-210-0-64-26',
        '10-210-1-0-26',
      ]);
      const got = await pages((o) => ds.blocks.listPage(o), { limit: 2, labelSelector: selector });
      assert.ok(got.length >= 3, `${got.length} pages`);
      for (const page of got) assert.ok(page.items.length <= 2, `a page of ${page.items.length}`);
      assert.equal(new Set(got.map((p) => p.resourceVersion)).size, 1, 'one resourceVersion');
      assert.deepEqual(
        got.flatMap((p) => p.items.map((b) => b.metadata.name)),
        all,
      );
      assert.equal(got.at(-1)?.continue, undefined);
      assert.equal(got[0]?.items[0]?.kind, 'IPAMBlock');
      assert.ok(got[0]?.items[0]?.spec.cidr);
    });

    it('later pages are served at the first page: a create or delete after page 1 does not show', async () => {
      const selector = { matchLabels: { 'contract.test/paged': 'yes' } };
      const before = (await ds.blocks.list({ labelSelector: selector })).map((b) => b.metadata.name);
      const got = await pages(
        (o) => ds.blocks.listPage(o),
        { limit: 2, labelSelector: selector },
        async () => {
          await ds.blocks.delete('10-210-1-0-26');
          await ds.blocks.create(block('10.210.2.0/26', { 'contract.test/paged': 'yes' }));
        },
      );
      assert.deepEqual(
        got.flatMap((p) => p.items.map((b) => b.metadata.name)),
        before,
      );
      assert.deepEqual(
        (await ds.blocks.list({ labelSelector: selector })).map((b) => b.metadata.name),
        ['10-210-0-0-26', '10-210-0-128-26', '10-210-0-192-26', '10-210-0-64-26', '10-210-2-0-26'],
      );
    });

    it('a continue token may be used again; a malformed one is Invalid; after compaction it is Expired', async () => {
      const selector = { matchLabels: { 'contract.test/paged': 'yes' } };
      const first = await ds.blocks.listPage({ limit: 2, labelSelector: selector });
      assert.ok(first.continue);
      const second = await ds.blocks.listPage({
        limit: 2,
        labelSelector: selector,
        continue: first.continue,
      });
      const again = await ds.blocks.listPage({ limit: 2, labelSelector: selector, continue: first.continue });
      assert.deepEqual(
        again.items.map((b) => b.metadata.name),
        second.items.map((b) => b.metadata.name),
      );
      await assert.rejects(ds.blocks.listPage({ limit: 2, continue: 'not-a-token' }), isInvalid);
      await ds.blocks.create(block('10.210.3.0/26', { 'contract.test/paged': 'yes' }));
      await subject.compact();
      await assert.rejects(
        ds.blocks.listPage({ limit: 2, labelSelector: selector, continue: first.continue }),
        isExpired,
      );
    });

    it('listAll reads every page, and starts over once when its token expires mid-list', async () => {
      const selector = { matchLabels: { 'contract.test/paged': 'yes' } };
      const names = async (): Promise<string[]> =>
        (await ds.blocks.list({ labelSelector: selector })).map((b) => b.metadata.name);
      const want = await names();
      const counted: number[] = [];
      const plain = await listAll((o) => ds.blocks.listPage(o), {
        limit: 2,
        labelSelector: selector,
        onPage: (n) => counted.push(n),
      });
      assert.deepEqual(
        plain.items.map((b) => b.metadata.name),
        want,
      );
      assert.ok(plain.resourceVersion);
      assert.equal(counted.at(-1), want.length);
      let calls = 0;
      const expiring = async (o: PageOptions): Promise<Page<IPAMBlock>> => {
        calls += 1;
        if (calls === 2) {
          // between page 1 and page 2 of the first attempt: a change, then a compaction past it
          await ds.blocks.create(block('10.210.4.0/26', { 'contract.test/paged': 'yes' }));
          await subject.compact();
        }
        return ds.blocks.listPage(o);
      };
      const restarted = await listAll(expiring, { limit: 2, labelSelector: selector });
      assert.deepEqual(
        restarted.items.map((b) => b.metadata.name),
        await names(),
      );
      assert.ok(
        restarted.items.some((b) => b.metadata.name === '10-210-4-0-26'),
        'the restart sees the change',
      );
      assert.ok(calls > Math.ceil(want.length / 2) + 1, `${calls} calls: the list started over`);
    });

    it('pods by field selector: spec.nodeName, status.podIP, both', async () => {
      const [nodeA, nodeB] = [`cn-a-${worldId}`, `cn-b-${worldId}`];
      const keys = async (o: Parameters<Datastore['listPods']>[0]): Promise<string[]> =>
        (await ds.listPods({ ...o, labelSelector: inWorld })).map(podKey).sort();
      assert.deepEqual(await keys({ nodeName: nodeA }), [`cpa-${worldId}/p1`, `cpb-${worldId}/p1`]);
      assert.deepEqual(await keys({ podIP: '10.211.0.2' }), [`cpa-${worldId}/p2`]);
      assert.deepEqual(await keys({ nodeName: nodeB, podIP: '10.211.0.2' }), [`cpa-${worldId}/p2`]);
      assert.deepEqual(await keys({ nodeName: nodeA, podIP: '10.211.0.2' }), []);
      const page = await ds.listPodPage({ limit: 10, nodeName: nodeB, labelSelector: inWorld });
      assert.deepEqual(page.items.map(podKey), [`cpa-${worldId}/p2`, `cpb-${worldId}/p0`]);
    });

    it('pod and node pages tell their continue token early (onContinue), equal to the page token', async () => {
      for (const listPage of [
        (o: PageOptions) => ds.listPodPage({ ...o, labelSelector: inWorld }),
        (o: PageOptions) => ds.listNodePage({ ...o, labelSelector: inWorld }),
      ]) {
        let token: string | undefined;
        do {
          const told: (string | undefined)[] = [];
          const page = await listPage({
            limit: 1,
            ...(token ? { continue: token } : {}),
            onContinue: (t) => told.push(t),
          });
          assert.deepEqual(told, [page.continue]);
          token = page.continue;
        } while (token);
      }
    });

    it('pods and nodes page like the CRs: namespace/name order, one resourceVersion', async () => {
      const podPages = await pages((o) => ds.listPodPage({ ...o, labelSelector: inWorld }), { limit: 1 });
      assert.deepEqual(
        podPages.flatMap((p) => p.items.map(podKey)),
        [`cpa-${worldId}/p1`, `cpa-${worldId}/p2`, `cpb-${worldId}/p0`, `cpb-${worldId}/p1`],
      );
      assert.equal(new Set(podPages.map((p) => p.resourceVersion)).size, 1);
      const nodes = await listAll((o) => ds.listNodePage(o), { limit: 1, labelSelector: inWorld });
      assert.deepEqual(
        nodes.items.map((n) => n.metadata.name),
        [`cn-a-${worldId}`, `cn-b-${worldId}`],
      );
    });
  });
}
