// Combining (docs/design-plugin.md §Host lock, "Combining") with the real executable, the real
// flock and the real API server, requests counted by the API server itself: ADDs queued behind a
// held lock are allocated by the first of them to get it — its own LIST + UPDATE, then one
// UPDATE for all the others — each with a distinct address recorded for its own handle and pod;
// DELs queued the same way are released by the first DEL holder in one UPDATE;
// an ADD whose wait timed out before anyone took it is never allocated; a queued ADD with a
// static address decides itself.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Allocation, Pod } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { adminDatastore } from '../helpers/crds.ts';
import { countedBlockRequests, doneLines } from './helpers/block-requests.ts';
import { fixture, type Fixture } from './helpers/cluster.ts';
import { holdLock, waiterOn } from './helpers/host-lock.ts';
import { ensurePlugin, runPlugin, type PluginRun } from './helpers/plugin-exe.ts';

const NODE = 'lq-node';
const NET = 'lqnet';
const NS = 'lq';

let fx: Fixture;
let ds: KubeDatastore;
let tmp: string;
let lockFile: string;

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
      ipv4Pools: ['lq-v4'],
      ...extra,
    },
  });
}

const env = (id: string, extra: Record<string, string> = {}): Record<string, string> => ({
  CNI_COMMAND: 'ADD',
  CNI_CONTAINERID: id,
  CNI_NETNS: '/var/run/netns/none',
  CNI_IFNAME: 'eth0',
  CNI_PATH: '/opt/cni/bin',
  CNI_ARGS: `K8S_POD_NAMESPACE=${NS};K8S_POD_NAME=pod-${id};K8S_POD_UID=uid-${id}`,
  ...extra,
});
const handle = (id: string): string => `${NET}.${id}.eth0`;
const addressOf = (r: PluginRun): string =>
  ((r.json?.ips as { address: string }[] | undefined) ?? [])[0]?.address ?? '';

function ok(r: PluginRun): void {
  assert.equal(r.status, 0, `exit ${r.status}: ${r.stdout} ${r.stderr}`);
}

/** A pod scheduled on the test's node, so the plugin records the allocation for it. */
async function createPod(id: string): Promise<void> {
  await ds.transport.request<Pod>('POST', `/api/v1/namespaces/${NS}/pods`, {
    body: {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `pod-${id}` },
      spec: { nodeName: NODE, containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
    },
  });
}

/** Every allocation by handle. */
function allocationsByHandle(): Map<string, Allocation> {
  return new Map(
    fx.blocks().flatMap((b) => Object.values(b.spec.allocations).map((a) => [a.handle, a] as const)),
  );
}

before(() => {
  ensurePlugin();
  fx = fixture();
  ds = adminDatastore();
  tmp = mkdtempSync(join(tmpdir(), 'bipam-lock-queue-'));
  lockFile = join(tmp, 'cache', 'ipam.lock');
  fx.pool('lq-v4', '10.123.0.0/16', 26);
  fx.apply({ apiVersion: 'v1', kind: 'Node', metadata: { name: NODE } });
  fx.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
});

after(() => {
  fx?.cleanup();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

void describe('lock queue (combining)', () => {
  void it('8 ADDs queued on the lock: 1 LIST + 2 UPDATEs in all, 8 distinct addresses, each recorded for its own pod', async () => {
    ok(await runPlugin(env('warm'), conf())); // claims the node's block
    rmSync(`${lockFile}.handoff.json`, { force: true });
    const ids = Array.from({ length: 8 }, (_, i) => `q${i}`);
    for (const id of ids) await createPod(id);
    const { out, requests } = await countedBlockRequests(async () => {
      const holder = await holdLock(lockFile);
      const runs = ids.map((id) => runPlugin(env(id), conf()));
      await waiterOn(lockFile, ids.length);
      await holder.kill();
      return Promise.all(runs);
    });
    out.forEach(ok);
    assert.equal(new Set(out.map(addressOf)).size, 8, 'distinct addresses');
    assert.deepEqual(requests, { 'LIST 200': 1, 'PUT 200': 2 });
    const done = doneLines(join(tmp, 'plugin.log'), 'ADD', ids);
    assert.equal(done.filter((d) => d.lockQueue === 'served').length, 7, JSON.stringify(done));
    assert.deepEqual(
      done.filter((d) => d.queueTaken !== undefined).map((d) => [d.queueTaken, d.queueServed]),
      [[7, 7]],
    );
    const addresses = fx.allocations();
    const allocations = allocationsByHandle();
    for (const [i, id] of ids.entries()) {
      assert.deepEqual(addresses.get(handle(id)), [addressOf(out[i]!)], `${id}'s answer is its own address`);
      const a = allocations.get(handle(id));
      assert.deepEqual([a?.namespace, a?.pod, a?.podUID, a?.node], [NS, `pod-${id}`, `uid-${id}`, NODE]);
    }
    assert.deepEqual(readdirSync(`${lockFile}.queue`), [], 'no queue file left');
  });

  void it('8 DELs queued on the lock: 2 UPDATEs in all, every allocation released', async () => {
    const ids = Array.from({ length: 8 }, (_, i) => `q${i}`);
    const { out, requests } = await countedBlockRequests(async () => {
      const holder = await holdLock(lockFile);
      const runs = ids.map((id) => runPlugin({ ...env(id), CNI_COMMAND: 'DEL' }, conf()));
      await waiterOn(lockFile, ids.length);
      await holder.kill();
      return Promise.all(runs);
    });
    out.forEach(ok);
    for (const id of ids) assert.equal(fx.allocations().has(handle(id)), false, `${id} released`);
    assert.equal(requests['PUT 200'], 2, JSON.stringify(requests));
    const done = doneLines(join(tmp, 'plugin.log'), 'DEL', ids);
    assert.equal(done.filter((d) => d.lockQueue === 'served').length, 7, JSON.stringify(done));
    assert.deepEqual(readdirSync(`${lockFile}.queue`), [], 'no queue file left');
  });

  void it('an ADD whose wait timed out before anyone took it is never allocated', async () => {
    const holder = await holdLock(lockFile);
    const late = await runPlugin(env('late'), conf({ lockTimeoutMs: 300 }));
    assert.equal(late.status, 1);
    assert.equal((late.json as { code?: number } | undefined)?.code, 11, late.stdout);
    const runs = ['n1', 'n2'].map((id) => runPlugin(env(id), conf()));
    await waiterOn(lockFile, 2);
    await holder.kill();
    (await Promise.all(runs)).forEach(ok);
    assert.equal(fx.allocations().has(handle('late')), false, 'the timed-out ADD holds nothing');
    assert.ok(fx.allocations().has(handle('n1')) && fx.allocations().has(handle('n2')));
    assert.ok(!existsSync(`${lockFile}.queue`) || readdirSync(`${lockFile}.queue`).length === 0);
  });

  void it('a queued ADD with a static address is not queued: it decides itself', async () => {
    const holder = await holdLock(lockFile);
    const runs = [
      runPlugin(env('s1'), conf()),
      runPlugin(env('s2', { CNI_ARGS: 'IgnoreUnknown=1;IP=10.123.200.7' }), conf()),
    ];
    await waiterOn(lockFile, 2);
    await holder.kill();
    const [auto, fixed] = await Promise.all(runs);
    ok(auto!);
    ok(fixed!);
    assert.equal(addressOf(fixed!), '10.123.200.7/26');
    const done = doneLines(join(tmp, 'plugin.log'), 'ADD', ['s2']);
    assert.equal(done[0]?.lockQueue, undefined, JSON.stringify(done));
  });
});
