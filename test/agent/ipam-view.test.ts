/**
 * The IPAM server's view of its node's blocks (block-controller/agent/ipam/view-datastore.ts) over
 * the memory datastore, and STATUS from the last known state (ipam/status.ts): a LIST of the
 * node's blocks is answered from the watch with the agent's own writes laid over it; a lost
 * compare-and-swap re-reads the block into the view; other reads pass through; when the API
 * server fails, STATUS answers from the node's own blocks and the last pools.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  affineSelector,
  familySelector,
  isConflict,
  MemoryDatastore,
  newBlock,
  parseCidr,
  snapshotOf,
  UnavailableError,
} from 'blockipam/core';
import type { IPAMBlock, IPPool } from 'blockipam/core';
import type { NodeInputs, NodeIpam } from 'blockipam/core/node-ipam';
import { createViewDatastore, lastKnownDatastore } from '../../block-controller/agent/ipam/view-datastore.ts';
import { withLastKnownStatus } from '../../block-controller/agent/ipam/status.ts';
import { createLogger } from '../../block-controller/shared/index.ts';
import { Writable } from 'node:stream';

const NODE = 'n1';
const NOW = Date.parse('2026-12-01T00:00:00Z');
const pool = (spec: Partial<IPPool['spec']> = {}): IPPool => ({
  apiVersion: 'ipam.blockipam.io/v1alpha1',
  kind: 'IPPool',
  metadata: { name: 'v4', creationTimestamp: '2026-01-01T00:00:00Z' },
  spec: { cidr: '10.70.0.0/16', blockSize: 26, ...spec },
});
const block = (cidr: string, node: string): IPAMBlock =>
  newBlock({ cidr: parseCidr(cidr)!, pool: 'v4', node, nowMs: NOW });

/** A memory store with two blocks of n1 and one of n2, and a "watch" that holds what it is given. */
async function setup(): Promise<{
  inner: MemoryDatastore;
  watch: IPAMBlock[];
  view: ReturnType<typeof createViewDatastore>;
}> {
  const inner = new MemoryDatastore({ pools: [pool()] });
  for (const b of [block('10.70.0.0/26', NODE), block('10.70.0.64/26', NODE), block('10.70.0.128/26', 'n2')])
    await inner.blocks.create(b);
  const watch = await inner.blocks.list({ labelSelector: affineSelector(NODE) });
  const view = createViewDatastore({ inner, node: NODE, watched: () => watch });
  return { inner, watch, view };
}

const names = (blocks: readonly IPAMBlock[]): string[] => blocks.map((b) => b.metadata.name);

describe('IPAM view datastore', () => {
  test('a LIST of the node’s blocks comes from the watch; another selector goes to the API', async () => {
    const { view } = await setup();
    assert.deepEqual(names(await view.blocks.list({ labelSelector: affineSelector(NODE) })), [
      '10-70-0-0-26',
      '10-70-0-64-26',
    ]);
    assert.deepEqual(view.stats, { viewLists: 1, blockReads: 0 });
    assert.equal((await view.blocks.list({ labelSelector: familySelector(4) })).length, 3);
    assert.deepEqual(view.stats, { viewLists: 1, blockReads: 1 });
  });

  test('its own UPDATE is seen at once, before the watch has it; then the watch wins again', async () => {
    const { inner, watch, view } = await setup();
    const [first] = await view.blocks.list({ labelSelector: affineSelector(NODE) });
    assert.ok(first);
    const written = await view.blocks.update({
      ...first,
      metadata: { ...first.metadata, annotations: { mark: 'ours' } },
    });
    const seen = (await view.blocks.list({ labelSelector: affineSelector(NODE) }))[0];
    assert.equal(seen?.metadata.annotations?.mark, 'ours', 'the view has the write');
    // the watch catches up, and a later write by someone else arrives through it
    const other = await inner.blocks.update({
      ...written,
      metadata: { ...written.metadata, annotations: { mark: 'theirs' } },
    });
    watch[0] = other;
    view.observe(other);
    assert.equal(
      (await view.blocks.list({ labelSelector: affineSelector(NODE) }))[0]?.metadata.annotations?.mark,
      'theirs',
    );
  });

  test('its own DELETE hides the block while the watch still shows it', async () => {
    const { view } = await setup();
    const [first] = await view.blocks.list({ labelSelector: affineSelector(NODE) });
    assert.ok(first);
    await view.blocks.delete(first.metadata.name, { resourceVersion: first.metadata.resourceVersion! });
    assert.deepEqual(names(await view.blocks.list({ labelSelector: affineSelector(NODE) })), [
      '10-70-0-64-26',
    ]);
  });

  test('a lost compare-and-swap re-reads the block into the view', async () => {
    const { inner, view } = await setup();
    const [stale] = await view.blocks.list({ labelSelector: affineSelector(NODE) });
    assert.ok(stale);
    await inner.blocks.update({ ...stale, metadata: { ...stale.metadata, annotations: { mark: 'theirs' } } });
    await assert.rejects(view.blocks.update(stale), (e) => isConflict(e));
    const now = (await view.blocks.list({ labelSelector: affineSelector(NODE) }))[0];
    assert.equal(now?.metadata.annotations?.mark, 'theirs', 'the retry starts from the block as it is');
  });
});

describe('STATUS from the last known state', () => {
  const quiet = createLogger({ component: 'test', stream: new Writable({ write: (_c, _e, cb) => cb() }) });
  const failing = (error: Error): NodeIpam => {
    const fail = () => Promise.reject(error);
    return { add: fail, del: fail, check: fail, gc: fail, status: fail };
  };
  const inputs = (pools: IPPool[]): NodeInputs => ({
    snapshot: () => snapshotOf({ config: undefined, pools, reservations: [] }, NOW),
    nodeLabels: () => ({}),
    pod: () => undefined,
    namespace: () => undefined,
  });
  const status = async (ipam: NodeIpam, pools: IPPool[]) => {
    const { view } = await setup();
    return withLastKnownStatus({
      ipam,
      lastKnown: lastKnownDatastore(view, NODE),
      inputs: inputs(pools),
      log: quiet,
    }).status({ node: NODE, families: [4], pools: { 4: [], 6: [] } }, AbortSignal.timeout(5_000));
  };

  test('API server unreachable, the node’s block has room: ready', async () =>
    assert.deepEqual(await status(failing(new UnavailableError('connect ECONNREFUSED')), [pool()]), {
      kind: 'ready',
    }));

  test('API server unreachable, no pool for this node: not ready, naming why', async () => {
    const outcome = await status(failing(new UnavailableError('down')), [
      pool({ nodeSelector: { matchLabels: { zone: 'elsewhere' } } }),
    ]);
    assert.equal(outcome.kind, 'notReady');
    assert.match(outcome.kind === 'notReady' ? outcome.message : '', /no usable IPv4 pool for node n1/);
  });

  test('a failure that is not the API server’s is not hidden', async () =>
    assert.rejects(status(failing(new Error('a bug')), [pool()]), /a bug/));
});
