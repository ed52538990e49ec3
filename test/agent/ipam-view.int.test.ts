/**
 * The agent's IPAM service over its view of the node's blocks (block-controller/agent/ipam/
 * view-datastore.ts) on the real API server, while the view lags: the plugin's direct path (core's
 * node IPAM service straight on the API server) allocates in the node's block after the view's
 * last watch event. The view's watch is held still here (the blocks as listed before the direct
 * write) — the moment between a write and its watch event, made to last. DEL must release the
 * direct path's address at the API server, CHECK must find it; with the watch not current (not
 * synced, or disconnected) the node's blocks are read at the API server.
 */
import assert from 'node:assert/strict';
import { after, beforeEach, describe, test } from 'node:test';
import { Writable } from 'node:stream';
import { affineSelector } from 'blockipam/core';
import type { IPAMBlock, IPPool } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { createNodeIpam, datastoreInputs } from 'blockipam/core/node-ipam';
import type { AddOutcome, NodeIpam } from 'blockipam/core/node-ipam';
import { agentNodeIpam } from '../../block-controller/agent/ipam/service.ts';
import { createViewDatastore } from '../../block-controller/agent/ipam/view-datastore.ts';
import type { ViewDatastore } from '../../block-controller/agent/ipam/view-datastore.ts';
import { createLogger } from '../../block-controller/shared/index.ts';
import { adminDatastore, wipeBlockipam } from '../helpers/crds.ts';
import { ipamCalls } from '../helpers/ipam-calls.ts';
import { nodeHandles } from './fixtures.ts';

const NODE = 'lag-1';
const log = createLogger({ component: 'test', stream: new Writable({ write: (_c, _e, cb) => cb() }) });
const ds: KubeDatastore = adminDatastore();
beforeEach(() => wipeBlockipam(ds));
after(async () => {
  await wipeBlockipam(ds);
  ds.close();
});

const pool: IPPool = { metadata: { name: 'lag' }, spec: { cidr: '10.93.0.0/24', blockSize: 26 } };
const sig = (): AbortSignal => AbortSignal.timeout(20_000);
const { attachment, addCall } = ipamCalls(NODE);
const addressOf = (out: AddOutcome): string => {
  assert.equal(out.kind, 'allocated', JSON.stringify(out));
  return out.kind === 'allocated' ? (out.ips[0]?.address.split('/')[0] ?? '') : '';
};
/** Handles allocated in the node's blocks at the API server. */
const handles = (): Promise<string[]> => nodeHandles(ds, NODE);

/** The plugin's direct path: core's service straight on the API server. */
const directPath = (): NodeIpam => createNodeIpam({ ds, inputs: datastoreInputs(ds) });

/** The agent's service as ipam/index.ts wires it, over a view whose watch shows `watched`. */
function agentOver(watched: () => readonly IPAMBlock[], current: () => boolean) {
  const view: ViewDatastore = createViewDatastore({ inner: ds, node: NODE, watched, current });
  const { ipam } = agentNodeIpam({
    node: NODE,
    view,
    authority: view.direct,
    inputs: datastoreInputs(ds),
    log,
  });
  return { view, ipam };
}

describe('agent IPAM: DEL and CHECK while the view lags a direct write', () => {
  test('DEL releases the direct path’s address; CHECK finds it first', async () => {
    await ds.pools.create(pool);
    // The node's block exists and the watch has it, empty (the agent allocated there before).
    const warm = await directPath().add(addCall('warm'), sig());
    addressOf(warm);
    await directPath().del({ attachment: attachment('warm'), node: NODE }, sig());
    const watched = await ds.blocks.list({ labelSelector: affineSelector(NODE) });
    assert.equal(watched.length, 1);
    const { view, ipam } = agentOver(
      () => watched,
      () => true,
    );
    // The agent restarts; meanwhile the plugin's direct path allocates in that block.
    const ip = addressOf(await directPath().add(addCall('direct'), sig()));
    assert.deepEqual(await handles(), ['net.direct.eth0']);
    const check = { attachment: attachment('direct'), node: NODE, expectedIPs: [ip] };
    assert.deepEqual(await ipam.check(check, sig()), { kind: 'ok' });
    assert.deepEqual(await ipam.del({ attachment: attachment('direct'), node: NODE }, sig()), {
      released: 1,
    });
    assert.deepEqual(await handles(), [], 'released at the API server: no leak');
    assert.equal(
      view.stats.directLists,
      2,
      'CHECK’s miss listed once; the DEL of a handle the agent did not allocate once more',
    );
  });

  test('a DEL straight after the direct write, no CHECK before it, releases it too', async () => {
    await ds.pools.create(pool);
    const { view, ipam } = agentOver(
      () => [],
      () => true,
    );
    addressOf(await directPath().add(addCall('d2'), sig()));
    assert.deepEqual(await ipam.del({ attachment: attachment('d2'), node: NODE }, sig()), { released: 1 });
    assert.deepEqual(await handles(), []);
    assert.equal(view.stats.directLists, 1);
  });

  test('while the watch is not current the node’s blocks are read at the API server', async () => {
    await ds.pools.create(pool);
    const { view, ipam } = agentOver(
      () => [],
      () => false,
    );
    const ip = addressOf(await directPath().add(addCall('d3'), sig()));
    // an ADD through the agent sees the direct path's block and allocates next to it
    const mine = addressOf(await ipam.add(addCall('a3'), sig()));
    assert.notEqual(mine, ip);
    assert.deepEqual((await handles()).sort(), ['net.a3.eth0', 'net.d3.eth0']);
    assert.equal(view.stats.viewLists, 0, 'nothing answered from the view');
    assert.ok(view.stats.directLists >= 1);
  });
});
