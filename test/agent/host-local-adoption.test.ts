// The agent's host-local import (block-controller/agent/adopt/host-local.ts) over the memory
// datastore and a real store directory: an opted-in node's files are recorded under the handles
// their pods' DELs compute, in one write per block; a file no pod holds waits out the grace period,
// then moves to <store>.quarantine; a re-run writes nothing; the conflist follows the label.
import assert from 'node:assert/strict';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
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
  // `duringWrite` runs while a block UPDATE is in flight (a DEL or an ADD racing the pass)
  const hooks: { duringWrite?: () => void } = {};
  const racing = {
    ...inner,
    blocks: {
      ...inner.blocks,
      get: inner.blocks.get.bind(inner.blocks),
      list: inner.blocks.list.bind(inner.blocks),
      update: (b: IPAMBlock) => {
        hooks.duringWrite?.();
        hooks.duringWrite = undefined;
        return inner.blocks.update(b);
      },
    },
  } as unknown as MemoryDatastore;
  const view = createViewDatastore({ inner: racing, node: NODE, watched: () => [listed] });
  const node = { metadata: { name: NODE, labels } };
  const pods = [running('a', '10.244.1.2'), running('b', '10.244.1.3')];
  const state = {
    node: NODE,
    synced: true,
    nodeObject: () => node,
    pools: () => [POOL],
    pods: () => pods,
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
    pods,
    hooks,
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

  test('an entry a live pod holds is never moved, even when it cannot be imported: a conflict, kept', async () => {
    const w = await setup({ 'blockipam.io/adopt': 'true' });
    // pod c holds .5, but the block has it allocated to another handle (a leftover allocation)
    const b = await w.blockNow();
    b.spec.allocations[5] = {
      handle: 'blockipam.left.eth0',
      node: NODE,
      allocatedAt: '2026-01-01T00:00:00Z',
      sequence: 1,
    };
    await w.inner.blocks.update(b);
    writeFileSync(join(w.store, '10.244.1.5'), 'ctr-c\r\neth0');
    w.pods.push(running('c', '10.244.1.5'));
    await w.adoption.flush();
    w.advance(3_600_000);
    await w.adoption.flush();
    assert.ok(readdirSync(w.store).includes('10.244.1.5'), 'the live pod’s entry stays');
    assert.equal(await w.gauge('conflict'), 1);
    assert.ok(
      w.optIns.length > 0 && w.optIns.every(Boolean),
      'the store keeps it from every ADD: the node may be served',
    );
    await w.adoption.stop();
  });

  test('an entry replaced while the pass runs is not moved; a second quarantine of an address keeps the first', async () => {
    const w = await setup({ 'blockipam.io/adopt': 'true' });
    await w.adoption.flush(); // .9 unmatched from now
    w.advance(60_000);
    writeFileSync(join(w.store, '10.244.1.4'), 'ctr-d\r\neth0');
    w.pods.push(running('d', '10.244.1.4')); // an import, so the pass writes its block
    // .9's DEL and a new container's ADD while the pass writes
    w.hooks.duringWrite = () => writeFileSync(join(w.store, '10.244.1.9'), 'ctr-new\r\neth0');
    await w.adoption.flush();
    assert.equal(
      readFileSync(join(w.store, '10.244.1.9'), 'utf8'),
      'ctr-new\r\neth0',
      'the new container’s entry stays',
    );
    assert.ok(!existsSync(quarantineDirOf(w.store)) || readdirSync(quarantineDirOf(w.store)).length === 0);
    await w.adoption.flush(); // the new entry's grace period starts
    w.advance(60_000);
    await w.adoption.flush(); // moved
    writeFileSync(join(w.store, '10.244.1.9'), 'ctr-later\r\neth0');
    await w.adoption.flush();
    w.advance(60_000);
    await w.adoption.flush(); // moved beside the first
    const moved = readdirSync(quarantineDirOf(w.store)).sort();
    assert.deepEqual(moved, ['10.244.1.9', '10.244.1.9.1']);
    assert.deepEqual(
      moved.map((f) => readFileSync(join(quarantineDirOf(w.store), f), 'utf8')),
      ['ctr-new\r\neth0', 'ctr-later\r\neth0'],
      'nothing overwritten',
    );
    await w.adoption.stop();
  });

  test('a file replaced by another container while the import writes: that import is released again', async () => {
    const w = await setup({ 'blockipam.io/adopt': 'true' });
    w.hooks.duringWrite = () => writeFileSync(join(w.store, '10.244.1.2'), 'ctr-other\r\neth0');
    await w.adoption.flush();
    const handles = Object.values((await w.blockNow()).spec.allocations).map((a) => a.handle);
    assert.deepEqual(handles, ['blockipam.ctr-b.eth0'], 'ctr-a’s import went again');
    await w.adoption.stop();
  });

  test('a live pod address neither in the store nor in a block holds the conflist back, and says so', async () => {
    const w = await setup({ 'blockipam.io/adopt': 'true' });
    w.pods.push(running('e', '10.244.1.6')); // the store is not where this pod's file is
    await w.adoption.flush();
    assert.deepEqual(w.optIns, [], 'no conflist');
    assert.equal(await w.gauge('unaccounted'), 1);
    writeFileSync(join(w.store, '10.244.1.6'), 'ctr-e\r\neth0');
    await w.adoption.flush();
    assert.deepEqual(w.optIns, [true]);
    assert.equal(await w.gauge('unaccounted'), 0);
    await w.adoption.stop();
  });

  test('a failed pass writes no conflist', async () => {
    const w = await setup({ 'blockipam.io/adopt': 'true' });
    rmSync(w.store, { recursive: true });
    writeFileSync(w.store, 'not a directory');
    await w.adoption.flush();
    assert.deepEqual(w.optIns, []);
    await w.adoption.stop();
  });
});
