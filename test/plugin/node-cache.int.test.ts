// The plugin executable with the node agent's node cache (docs/design-node-cache.md), on the
// real API server, requests counted by the API server itself (apiserver_request_total): a warm
// ADD is one block UPDATE, DEL one UPDATE, STATUS nothing; a stale block costs one 409 and a
// re-read; a truncated, stale, foreign or absent cache falls back to the API reads and never
// fails; with and without the cache the allocations are the same. The cache file is written the
// way the agent writes it: from the API server's state, with core's format module.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { IPAMBlock, Pod } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { controlPlane } from '../helpers/control-plane.ts';
import { adminDatastore } from '../helpers/crds.ts';
import { delta, requestCounters } from '../bench/plugin-bench-lib.ts';
import { fixture, type Fixture } from './helpers/cluster.ts';
import { holdLock, waiterOn } from './helpers/host-lock.ts';
import { ensurePlugin, runPlugin, type PluginRun } from './helpers/plugin-exe.ts';
import { writeNodeCache, type CacheSpoilers } from './helpers/node-cache-writer.ts';

const NODE = 'nc-node';
const NET = 'ncnet';
const NS = 'nc-ns';
const API_KINDS =
  /^(ipam\.blockipam\.io\/(ipamblocks|ippools|ipamconfigs|ipreservations)|\/(pods|namespaces|nodes)) /;

let fx: Fixture;
let ds: KubeDatastore;
let tmp: string;
const uids = new Map<string, string>();

function conf(node: string, ipam: Record<string, unknown> = {}, top: Record<string, unknown> = {}): string {
  return JSON.stringify({
    cniVersion: '1.1.0',
    name: NET,
    type: 'ptp',
    ipam: {
      type: 'blockipam',
      kubeconfig: fx.kubeconfig,
      nodeName: node,
      logFile: join(tmp, `${node}.log`),
      cacheDir: join(tmp, `cache-${node}`),
      nodeCacheFile: join(tmp, `${node}.json`),
      ipv4Pools: ['nc-v4'],
      ...ipam,
    },
    ...top,
  });
}

function env(command: string, pod: string, uid = uids.get(pod)): Record<string, string> {
  return {
    CNI_COMMAND: command,
    CNI_CONTAINERID: `ctr-${pod}`,
    CNI_NETNS: '/var/run/netns/none',
    CNI_IFNAME: 'eth0',
    CNI_PATH: '/opt/cni/bin',
    CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${NS};K8S_POD_NAME=${pod};K8S_POD_INFRA_CONTAINER_ID=ctr-${pod}${uid ? `;K8S_POD_UID=${uid}` : ''}`,
  };
}

const statusEnv = {
  CNI_COMMAND: 'STATUS',
  CNI_CONTAINERID: '',
  CNI_NETNS: '',
  CNI_IFNAME: '',
  CNI_PATH: '/opt/cni/bin',
};

async function createPod(name: string, node: string): Promise<void> {
  const pod = await ds.transport.request<Pod>('POST', `/api/v1/namespaces/${NS}/pods`, {
    body: {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name },
      spec: { nodeName: node, containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
    },
  });
  uids.set(name, pod.metadata.uid ?? '');
}

/** The API requests of the blockipam kinds that `run` caused, as "resource VERB code" → count. */
async function counted(
  run: () => Promise<PluginRun>,
): Promise<{ r: PluginRun; requests: Record<string, number> }> {
  const cp = controlPlane();
  const before = await requestCounters(cp.apiUrl, cp.adminToken, cp.caFile);
  const r = await run();
  const after = await requestCounters(cp.apiUrl, cp.adminToken, cp.caFile);
  const requests: Record<string, number> = {};
  for (const [key, n] of delta(before, after, API_KINDS)) requests[key.replace(/^[^/]*\//, '')] = n;
  return { r, requests };
}

/** The `done` line of the node's last plugin run. */
function lastDone(node: string): Record<string, unknown> {
  const lines = readFileSync(join(tmp, `${node}.log`), 'utf8')
    .trim()
    .split('\n');
  const done = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'done');
  return done.at(-1) ?? {};
}

const cache = (node = NODE, spoil: CacheSpoilers = {}): Promise<unknown> =>
  writeNodeCache(ds, node, join(tmp, `${node}.json`), spoil);

function ok(r: PluginRun): void {
  assert.equal(r.status, 0, `exit ${r.status}: ${r.stdout} ${r.stderr}`);
}

/** Where `handle`'s address is: its block and ordinal, and the allocation recorded. */
function allocationOf(
  handle: string,
): { block: IPAMBlock; ordinal: number; pod?: string; podUID?: string; node: string } | undefined {
  for (const block of fx.blocks())
    for (const [ordinal, a] of Object.entries(block.spec.allocations))
      if (a.handle === handle) return { block, ordinal: Number(ordinal), ...a };
  return undefined;
}

const addressOf = (r: PluginRun): string =>
  ((r.json?.ips as { address: string }[] | undefined) ?? [])[0]?.address ?? '';

before(async () => {
  ensurePlugin();
  fx = fixture();
  ds = adminDatastore();
  tmp = mkdtempSync(join(tmpdir(), 'bipam-nodecache-'));
  fx.pool('nc-v4', '10.120.0.0/16', 26);
  fx.pool('nc-manual', '10.121.0.0/16', 26, { assignmentMode: 'Manual' });
  for (const node of [NODE, 'nc-a', 'nc-b'])
    fx.apply({ apiVersion: 'v1', kind: 'Node', metadata: { name: node, labels: { 'nc-test': 'yes' } } });
  fx.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS, labels: { team: 'nc' } } });
  for (let i = 0; i < 12; i++) await createPod(`p${i}`, NODE);
  for (let i = 0; i < 4; i++) {
    await createPod(`a${i}`, 'nc-a');
    await createPod(`b${i}`, 'nc-b');
  }
  // The node's first ADD claims its block; the next, with a cache, learns the cluster's UID.
  ok(await runPlugin(env('ADD', 'p0'), conf(NODE)));
  await cache();
  const learn = await counted(() => runPlugin(env('ADD', 'p1'), conf(NODE)));
  ok(learn.r);
  assert.deepEqual(learn.requests, { 'namespaces GET 200': 1, 'ipamblocks PUT 200': 1 });
});

after(() => {
  fx?.cleanup();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('node cache: requests', () => {
  it('a warm ADD with a valid cache is exactly one block UPDATE and no read', async () => {
    await cache();
    const { r, requests } = await counted(() => runPlugin(env('ADD', 'p2'), conf(NODE)));
    ok(r);
    assert.deepEqual(requests, { 'ipamblocks PUT 200': 1 });
    assert.equal(lastDone(NODE).nodeCache, 'used');
    assert.equal(lastDone(NODE).podFromCache, true);
    const a = allocationOf(`${NET}.ctr-p2.eth0`);
    assert.ok(a, 'allocated');
    assert.equal(a.pod, 'p2');
    assert.equal(a.podUID, uids.get('p2'));
    assert.equal(a.node, NODE);
    assert.equal(addressOf(r).split('/')[1], '26');
  });

  it('DEL with a valid cache is exactly one block UPDATE', async () => {
    await cache();
    const { r, requests } = await counted(() => runPlugin(env('DEL', 'p2'), conf(NODE)));
    ok(r);
    assert.deepEqual(requests, { 'ipamblocks PUT 200': 1 });
    assert.equal(allocationOf(`${NET}.ctr-p2.eth0`), undefined);
  });

  it('STATUS with a valid cache sends no request', async () => {
    await cache();
    const { r, requests } = await counted(() => runPlugin(statusEnv, conf(NODE)));
    ok(r);
    assert.deepEqual(requests, {});
  });

  it('a stale block in the cache costs one 409 and a re-read, and the address is still unique', async () => {
    await cache();
    ok(await runPlugin(env('ADD', 'p3'), conf(NODE))); // the cache now predates this write
    const { r, requests } = await counted(() => runPlugin(env('ADD', 'p4'), conf(NODE)));
    ok(r);
    assert.deepEqual(requests, {
      'ipamblocks PUT 409': 1,
      'ipamblocks GET 200': 1,
      'ipamblocks PUT 200': 1,
    });
    const p3 = allocationOf(`${NET}.ctr-p3.eth0`);
    const p4 = allocationOf(`${NET}.ctr-p4.eth0`);
    assert.ok(p3 && p4);
    assert.notDeepEqual([p3.block.metadata.name, p3.ordinal], [p4.block.metadata.name, p4.ordinal]);
  });

  it('DEL of an allocation newer than the cache LISTs instead of trusting it', async () => {
    await cache();
    ok(await runPlugin(env('ADD', 'p5'), conf(NODE)));
    const { r, requests } = await counted(() => runPlugin(env('DEL', 'p5'), conf(NODE)));
    ok(r);
    assert.equal(requests['ipamblocks LIST 200'], 1);
    assert.equal(allocationOf(`${NET}.ctr-p5.eth0`), undefined, 'released');
  });

  it('a DEL that waited for the host lock LISTs instead of trusting the cache: no 409 in a mass DEL', async () => {
    for (const pod of ['q0', 'q1']) {
      await createPod(pod, NODE);
      ok(await runPlugin(env('ADD', pod), conf(NODE)));
    }
    await cache(); // it holds both allocations
    const block = allocationOf(`${NET}.ctr-q0.eth0`)?.block;
    assert.ok(block, 'q0 allocated');
    // The test holds the node's host lock and, as the DEL before this one does, writes the block
    // — a holder that hands nothing off (as GC; a plugin DEL would hand the block it wrote on:
    // test/plugin/handoff.int.test.ts).
    const lockFile = join(tmp, `cache-${NODE}`, 'ipam.lock');
    rmSync(`${lockFile}.handoff.json`, { force: true });
    const lock = await holdLock(lockFile);
    const del = counted(() => runPlugin(env('DEL', 'q1'), conf(NODE)));
    await waiterOn(lockFile);
    const meta = block.metadata;
    await ds.blocks.update({
      ...block,
      metadata: { ...meta, annotations: { ...meta.annotations, touched: '1' } },
    });
    await lock.kill();
    const { r, requests } = await del;
    ok(r);
    assert.equal(requests['ipamblocks PUT 409'], undefined, 'no compare-and-swap conflict');
    assert.equal(requests['ipamblocks LIST 200'], 1, 'the node’s blocks are read under the lock');
    assert.equal(lastDone(NODE).nodeCache, 'LockWaited');
    assert.equal(allocationOf(`${NET}.ctr-q1.eth0`), undefined, 'released');
  });

  it('a pod the cache does not hold, or holds with another UID, is read from the API server', async () => {
    await cache(NODE, { edit: (d) => ({ ...d, pods: {} }) });
    const absent = await counted(() => runPlugin(env('ADD', 'p6'), conf(NODE)));
    ok(absent.r);
    assert.equal(absent.requests['pods GET 200'], 1);
    assert.equal(lastDone(NODE).podFromCache, false);
    await cache(NODE, {
      edit: (d) => ({
        ...d,
        pods: { ...d.pods, [`${NS}/p7`]: { ...d.pods[`${NS}/p7`]!, uid: 'an-older-pod' } },
      }),
    });
    const other = await counted(() => runPlugin(env('ADD', 'p7'), conf(NODE)));
    ok(other.r);
    assert.equal(other.requests['pods GET 200'], 1);
    assert.equal(allocationOf(`${NET}.ctr-p7.eth0`)?.podUID, uids.get('p7'));
  });

  it('pod annotations come from runtimeConfig when the runtime passes them', async () => {
    const top = {
      runtimeConfig: {
        'io.kubernetes.cri.pod-annotations': { 'ipam.blockipam.io/ippools': '["nc-manual"]' },
      },
    };
    await cache();
    const withCache = await counted(() => runPlugin(env('ADD', 'p8'), conf(NODE, {}, top)));
    ok(withCache.r);
    assert.match(addressOf(withCache.r), /^10\.121\./);
    assert.equal(withCache.requests['pods GET 200'], undefined);
    const without = await runPlugin(env('ADD', 'p9'), conf(NODE, { nodeCacheMaxAgeMs: 0 }, top));
    ok(without);
    assert.match(addressOf(without), /^10\.121\./);
  });
});

describe('node cache: fallback', () => {
  const spoiled: [string, string, CacheSpoilers | 'absent'][] = [
    ['truncated', 'Malformed', { truncate: 200 }],
    ['stale (heartbeat 60 s old)', 'Stale', { heartbeatAtMs: Date.now() - 60_000 }],
    ['from another cluster', 'Cluster', { clusterUID: '00000000-0000-4000-8000-00000000dead' }],
    ['from another node', 'Node', { nodeName: 'some-other-node' }],
    ['of another format version', 'Version', { edit: (d) => ({ ...d, version: 2 as never }) }],
    ['absent', 'Absent', 'absent'],
  ];
  let n = 0;
  for (const [name, reason, spoil] of spoiled) {
    it(`a cache ${name} is not used (${reason}); ADD and DEL still succeed from the API server`, async () => {
      const file = join(tmp, `${NODE}.json`);
      if (spoil === 'absent') rmSync(file, { force: true });
      else await cache(NODE, { ...spoil, heartbeatAtMs: spoil.heartbeatAtMs ?? Date.now() });
      const pod = `p${10 + (n++ % 2)}`;
      const add = await counted(() => runPlugin(env('ADD', pod), conf(NODE)));
      ok(add.r);
      assert.equal(lastDone(NODE).nodeCache, reason);
      assert.equal(add.requests['ipamblocks LIST 200'], 1, 'the node’s blocks are read');
      assert.equal(add.requests['pods GET 200'], 1, 'the pod is read');
      const a = allocationOf(`${NET}.ctr-${pod}.eth0`);
      assert.equal(a?.podUID, uids.get(pod));
      ok(await runPlugin(env('DEL', pod), conf(NODE)));
      assert.equal(allocationOf(`${NET}.ctr-${pod}.eth0`), undefined);
      ok(await runPlugin(statusEnv, conf(NODE)));
    });
  }
});

describe('node cache: contract', () => {
  it('the plugin with and without a cache gives the same allocations', async () => {
    // nc-a never uses a cache; nc-b gets a fresh one before each call, as a running agent keeps it.
    const steps: [string, number][] = [
      ['ADD', 0],
      ['ADD', 1],
      ['ADD', 2],
      ['DEL', 1],
      ['ADD', 3],
    ];
    for (const [command, i] of steps) {
      ok(await runPlugin(env(command, `a${i}`), conf('nc-a', { nodeCacheMaxAgeMs: 0 })));
      await cache('nc-b');
      ok(await runPlugin(env(command, `b${i}`), conf('nc-b')));
      assert.equal(lastDone('nc-b').nodeCache, 'used');
    }
    const shape = (prefix: string): unknown[] =>
      [0, 1, 2, 3].map((i) => {
        const a = allocationOf(`${NET}.ctr-${prefix}${i}.eth0`);
        return (
          a && {
            ordinal: a.ordinal,
            pool: a.block.metadata.labels?.['ipam.blockipam.io/pool'],
            pod: a.pod?.slice(1),
            uid: a.podUID === uids.get(`${prefix}${i}`),
          }
        );
      });
    assert.deepEqual(shape('b'), shape('a'));
    assert.equal(shape('a')[1], undefined, 'the DELed one is gone');
    const blocksOf = (node: string): number => fx.blocks().filter((b) => b.spec.affinity === node).length;
    assert.equal(blocksOf('nc-b'), blocksOf('nc-a'));
  });
});
