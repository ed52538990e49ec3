// The agent's host-local import (block-controller/agent/adopt/host-local.ts) over the memory
// datastore and a real store directory: an opted-in node's files are recorded under the handles
// their pods' DELs compute, in one write per block; a file no pod holds waits out the grace period,
// then moves to <store>.quarantine; a re-run writes nothing; the conflist follows the label.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { MemoryDatastore, mustParseCidr, newBlock } from 'blockipam/core';
import type { IPAMBlock, Pod } from 'blockipam/core';
import { HostLocalAdoption, quarantineDirOf } from '../../block-controller/agent/adopt/host-local.ts';
import { createViewDatastore } from '../../block-controller/agent/ipam/view-datastore.ts';
import { createAgentMetrics } from '../../block-controller/agent/metrics.ts';
import type { AgentState } from '../../block-controller/agent/state.ts';
import { Lifecycle } from '../../block-controller/shared/index.ts';
import { pool } from '../core/fixtures.ts';
import { quietLog as log } from './fixtures.ts';

const NODE = 'n1';
const POOL = pool(
  'kind',
  { cidr: '10.244.0.0/16', blockSize: 24, podCIDRBlocks: true },
  '2026-01-01T00:00:00Z',
);
const tmp = mkdtempSync(join(tmpdir(), 'bipam-adoption-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

const running = (name: string, ip: string): Pod => ({
  metadata: { name, namespace: 'default', uid: `uid-${name}` },
  spec: { nodeName: NODE },
  status: { phase: 'Running', podIPs: [{ ip }] },
});

async function setup(labels: Record<string, string>) {
  const store = join(tmp, `kindnet-${Math.random().toString(36).slice(2)}`);
  mkdirSync(store);
  writeFileSync(join(store, 'lock'), '');
  writeFileSync(join(store, '10.244.1.2'), 'ctr-a\r\neth0');
  writeFileSync(join(store, '10.244.1.3'), 'ctr-b'); // host-local before v0.8: the ID alone
  writeFileSync(join(store, '10.244.1.9'), 'ctr-gone\r\neth0'); // no pod holds it
  const block: IPAMBlock = newBlock({
    cidr: mustParseCidr('10.244.1.0/24'),
    pool: 'kind',
    node: NODE,
    nowMs: 0,
  });
  const inner = new MemoryDatastore({ pools: [POOL], blocks: [block] });
  // the watch as listed at the start, never catching up: the view lays the agent's writes over it
  const listed = (await inner.blocks.get(block.metadata.name))!;
  const view = createViewDatastore({ inner, node: NODE, watched: () => [listed] });
  const node = { metadata: { name: NODE, labels } };
  const state = {
    node: NODE,
    synced: true,
    nodeObject: () => node,
    pools: () => [POOL],
    pods: () => [running('a', '10.244.1.2'), running('b', '10.244.1.3')],
    onChange: () => undefined,
  } as unknown as AgentState;
  let now = 0;
  const optIns: boolean[] = [];
  const metrics = createAgentMetrics();
  const adoption = new HostLocalAdoption({
    state,
    view,
    store,
    network: 'blockipam',
    graceMs: 60_000,
    optIn: (optedIn) => {
      optIns.push(optedIn);
      return Promise.resolve();
    },
    log,
    metrics,
    lifecycle: new Lifecycle(log),
    clock: () => now,
    tickMs: 3_600_000,
  });
  const gauge = async (what: string): Promise<number | undefined> =>
    (await metrics.hostLocalFiles.get()).values.find((v) => v.labels.state === what)?.value;
  return {
    inner,
    store,
    node,
    adoption,
    optIns,
    gauge,
    advance: (ms: number) => (now += ms),
    blockNow: async () => (await inner.blocks.get(block.metadata.name))!,
  };
}

describe('host-local adoption', () => {
  test('imports the pods’ addresses in one write, quarantines the orphan after the grace period only', async () => {
    const w = await setup({ 'blockipam.io/adopt': 'true' });
    const writes = w.inner.stats.writes;
    await w.adoption.flush();
    assert.equal(w.inner.stats.writes - writes, 1, 'both addresses in one block write');
    const b = await w.blockNow();
    assert.deepEqual(
      Object.entries(b.spec.allocations).map(([o, a]) => [o, a.handle, a.pod, a.podUID, a.node, a.network]),
      [
        ['2', 'blockipam.ctr-a.eth0', 'a', 'uid-a', NODE, 'blockipam'],
        ['3', 'blockipam.ctr-b.eth0', 'b', 'uid-b', NODE, 'blockipam'],
      ],
    );
    assert.deepEqual(w.optIns, [true]);
    assert.equal(await w.gauge('imported'), 2);
    assert.equal(await w.gauge('pending'), 1);
    assert.ok(readdirSync(w.store).includes('10.244.1.9'), 'within the grace period the file stays');

    w.advance(60_000);
    const version = b.metadata.resourceVersion;
    await w.adoption.flush();
    assert.deepEqual(readdirSync(quarantineDirOf(w.store)), ['10.244.1.9']);
    assert.ok(!readdirSync(w.store).includes('10.244.1.9'));
    assert.equal(await w.gauge('quarantined'), 1);
    assert.equal(await w.gauge('pending'), 0);
    assert.equal((await w.blockNow()).metadata.resourceVersion, version, 'a re-run writes nothing');
    assert.equal(w.inner.stats.writes - writes, 1);
    await w.adoption.stop();
  });

  test('a node not opted in: nothing imported, the conflist kept away; a label taken off rolls back', async () => {
    const w = await setup({});
    await w.adoption.flush();
    assert.deepEqual((await w.blockNow()).spec.allocations, {});
    assert.deepEqual(w.optIns, [false]);
    w.node.metadata.labels = { 'blockipam.io/adopt': 'true' };
    await w.adoption.flush();
    w.node.metadata.labels = { 'blockipam.io/adopt': 'false' };
    await w.adoption.flush();
    assert.deepEqual(w.optIns, [false, true, false]);
    assert.equal(Object.keys((await w.blockNow()).spec.allocations).length, 2, 'what was imported stays');
    await w.adoption.stop();
  });
});
