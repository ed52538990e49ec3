// The lock hand-off (docs/design-plugin.md §Host lock, "Hand-off") with the real executable and
// the real API server, requests counted by the API server itself: ADDs and DELs that waited for
// the host lock take the node's blocks from the holder before them (one UPDATE, no LIST); a block
// someone else wrote since costs one 409 and a re-read; a hand-off that lacks the DEL's handle is
// not trusted (a release in it would free nothing); GC drops it.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { IPAMBlock } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { adminDatastore } from '../helpers/crds.ts';
import { countedBlockRequests, doneLines } from './helpers/block-requests.ts';
import { fixture, type Fixture } from './helpers/cluster.ts';
import { holdLock, waiterOn } from './helpers/host-lock.ts';
import { ensurePlugin, runPlugin, type PluginRun } from './helpers/plugin-exe.ts';

const NODE = 'ho-node';
const NET = 'honet';

let fx: Fixture;
let ds: KubeDatastore;
let tmp: string;
let lockFile: string;
let handoffFile: string;

function conf(extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    cniVersion: '1.1.0',
    name: NET,
    type: 'ptp',
    ipam: {
      type: 'blockipam',
      kubeconfig: fx.kubeconfig,
      nodeName: NODE,
      logFile: join(tmp, 'plugin.log'),
      cacheDir: join(tmp, 'cache'),
      nodeCacheFile: join(tmp, 'no-node-cache.json'),
      ipv4Pools: ['ho-v4'],
      // the hand-off alone: queued ADDs would otherwise be served by the first holder
      // (combining, test/plugin/lock-queue.int.test.ts)
      lockQueue: false,
      ...extra,
    },
  });
}

const env = (command: string, id: string): Record<string, string> => ({
  CNI_COMMAND: command,
  CNI_CONTAINERID: id,
  CNI_NETNS: '/var/run/netns/none',
  CNI_IFNAME: 'eth0',
  CNI_PATH: '/opt/cni/bin',
});
const handle = (id: string): string => `${NET}.${id}.eth0`;

function ok(r: PluginRun): void {
  assert.equal(r.status, 0, `exit ${r.status}: ${r.stdout} ${r.stderr}`);
}

/**
 * Starts `ids`' calls while a test process holds the lock and releases it once all of them wait.
 * The hand-off on disk then is what the holder before the test's left; with `handOffNow` its
 * time is set to the moment of release, as a plugin holder's would be (so that its age, bounded
 * at 5 s, is not what a test decides on a loaded machine).
 */
async function queued(cmd: string, ids: readonly string[], handOffNow = true): Promise<PluginRun[]> {
  const holder = await holdLock(lockFile);
  const runs = ids.map((id) => runPlugin(env(cmd, id), conf()));
  await waiterOn(lockFile, ids.length);
  if (handOffNow && existsSync(handoffFile)) {
    const text = readFileSync(handoffFile, 'utf8');
    const doc = text.startsWith('{"') ? (JSON.parse(text) as Record<string, unknown>) : undefined;
    if (doc) writeFileSync(handoffFile, JSON.stringify({ ...doc, at: Date.now() }));
  }
  await holder.kill();
  return Promise.all(runs);
}

const addressOf = (r: PluginRun): string =>
  ((r.json?.ips as { address: string }[] | undefined) ?? [])[0]?.address ?? '';

before(() => {
  ensurePlugin();
  fx = fixture();
  ds = adminDatastore();
  tmp = mkdtempSync(join(tmpdir(), 'bipam-handoff-'));
  lockFile = join(tmp, 'cache', 'ipam.lock');
  handoffFile = `${lockFile}.handoff.json`;
  fx.pool('ho-v4', '10.122.0.0/16', 26);
  fx.apply({ apiVersion: 'v1', kind: 'Node', metadata: { name: NODE } });
});

after(() => {
  fx?.cleanup();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

void describe('lock hand-off', () => {
  void it('ADDs queued on the lock: the first LISTs, the next two take its hand-off (one UPDATE each)', async () => {
    ok(await runPlugin(env('ADD', 'warm'), conf())); // claims the node's block
    rmSync(handoffFile, { force: true });
    const ids = ['a1', 'a2', 'a3'];
    const { out, requests } = await countedBlockRequests(() => queued('ADD', ids));
    out.forEach(ok);
    assert.equal(new Set(out.map(addressOf)).size, 3, 'distinct addresses');
    assert.deepEqual(requests, { 'LIST 200': 1, 'PUT 200': 3 });
    const done = doneLines(join(tmp, 'plugin.log'), 'ADD', ids);
    assert.equal(done.filter((d) => d.handoff === true).length, 2, JSON.stringify(done));
    assert.ok(existsSync(handoffFile), 'the last holder handed off');
  });

  void it('DELs queued on the lock: the ADDs’ hand-off serves them all, one UPDATE each, every allocation released', async () => {
    const ids = ['a1', 'a2', 'a3'];
    const { out, requests } = await countedBlockRequests(() => queued('DEL', ids));
    out.forEach(ok);
    assert.deepEqual(requests, { 'PUT 200': 3 });
    for (const id of ids) assert.equal(fx.allocations().has(handle(id)), false, `${id} released`);
    assert.equal(doneLines(join(tmp, 'plugin.log'), 'DEL', ids).filter((d) => d.handoff === true).length, 3);
  });

  void it('an old hand-off (over 5 s) is not used: the waiter LISTs', async () => {
    ok(await runPlugin(env('ADD', 'o1'), conf()));
    const doc = JSON.parse(readFileSync(handoffFile, 'utf8')) as Record<string, unknown>;
    writeFileSync(handoffFile, JSON.stringify({ ...doc, at: Date.now() - 6_000 }));
    const { out, requests } = await countedBlockRequests(() => queued('ADD', ['o2'], false));
    out.forEach(ok);
    assert.deepEqual(requests, { 'LIST 200': 1, 'PUT 200': 1 });
    assert.equal(doneLines(join(tmp, 'plugin.log'), 'ADD', ['o2'])[0]?.handoff, undefined);
    for (const id of ['o1', 'o2']) ok(await runPlugin(env('DEL', id), conf()));
  });

  void it('a block written by someone else since the hand-off: one 409, a re-read, a unique address', async () => {
    ok(await runPlugin(env('ADD', 'b1'), conf())); // hands off the block as it is now
    const [block] = (await ds.blocks.list()).filter((b) => b.spec.affinity === NODE);
    assert.ok(block);
    const meta = block.metadata;
    await ds.blocks.update({
      ...block,
      metadata: { ...meta, annotations: { ...meta.annotations, touched: '1' } },
    });
    const { out, requests } = await countedBlockRequests(() => queued('ADD', ['b2']));
    out.forEach(ok);
    assert.equal(requests['PUT 409'], 1, JSON.stringify(requests));
    assert.equal(requests['PUT 200'], 1);
    assert.notEqual(addressOf(out[0]!), fx.allocations().get(handle('b1'))?.[0]);
    assert.equal(doneLines(join(tmp, 'plugin.log'), 'ADD', ['b2'])[0]?.handoff, true);
  });

  void it('a hand-off that lacks the DEL’s handle is not used: the DEL LISTs and releases it', async () => {
    // A hand-off that does not know b2's allocation (as if written before it): a release from it
    // would find nothing and free nothing.
    const doc = JSON.parse(readFileSync(handoffFile, 'utf8')) as { blocks: IPAMBlock[] };
    for (const b of doc.blocks)
      for (const [ord, a] of Object.entries(b.spec.allocations))
        if (a.handle === handle('b2')) delete b.spec.allocations[ord];
    writeFileSync(handoffFile, JSON.stringify(doc));
    const { out, requests } = await countedBlockRequests(() => queued('DEL', ['b2']));
    out.forEach(ok);
    assert.equal(requests['LIST 200'], 1, JSON.stringify(requests));
    assert.equal(fx.allocations().has(handle('b2')), false, 'b2 released');
    assert.equal(doneLines(join(tmp, 'plugin.log'), 'DEL', ['b2'])[0]?.handoff, undefined);
  });

  void it('a corrupt or foreign hand-off is ignored, never an error', async () => {
    const foreign = (at: number): string =>
      JSON.stringify({ version: 1, cluster: 'elsewhere', node: NODE, at, blocks: [] });
    for (const text of ['{not json', foreign(Date.now())]) {
      writeFileSync(handoffFile, text);
      const id = `c${text.length}`;
      const [r] = await queued('ADD', [id]);
      ok(r!);
      assert.equal(doneLines(join(tmp, 'plugin.log'), 'ADD', [id])[0]?.handoff, undefined);
      ok(await runPlugin(env('DEL', id), conf()));
    }
  });

  void it('GC drops the hand-off (it writes blocks without following the node’s list)', async () => {
    ok(await runPlugin(env('ADD', 'g1'), conf()));
    await queued('ADD', ['g2']); // writes a hand-off
    assert.ok(existsSync(handoffFile));
    const gc = JSON.parse(conf()) as Record<string, unknown>;
    const r = await runPlugin(
      { CNI_COMMAND: 'GC', CNI_PATH: '/opt/cni/bin' },
      JSON.stringify({ ...gc, 'cni.dev/valid-attachments': [] }),
    );
    ok(r);
    assert.equal(existsSync(handoffFile), false);
    assert.equal(fx.allocations().has(handle('g1')), false, 'GC released what no attachment holds');
  });
});
