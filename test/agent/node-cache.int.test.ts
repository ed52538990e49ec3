/**
 * The agent's node cache file on the real API server: written once the watches synced, valid
 * for this cluster and node (core's decodeNodeCache), its content equal to the API's (the node's
 * blocks with their resourceVersions, the pool snapshot, this node's pods with UID and their
 * allocation annotations only, their namespaces, the node's labels), rewritten on every change,
 * mode 0600.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { autoAssign, decodeNodeCache, nodeBlocksSelector } from 'blockipam/core';
import type { NodeCacheDocument } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { kubectl } from '../helpers/control-plane.ts';
import { adminDatastore } from '../helpers/crds.ts';
import { applyNode, eventually, startAgent } from './agent-process.ts';
import type { AgentProcess } from './agent-process.ts';

const NODE = 'nc-1';
let ds: KubeDatastore;
let agent: AgentProcess;
let file: string;
let dir: string;
let clusterUID: string;

function apply(object: unknown): void {
  const r = kubectl(['apply', '-f', '-'], { input: JSON.stringify(object) });
  assert.equal(r.status, 0, r.stderr);
}

/** The cache as the plugin would accept it now, or undefined (absent, refused). */
function readCache(): NodeCacheDocument | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  const decoded = decodeNodeCache(text, { clusterUID, node: NODE, nowMs: Date.now(), maxAgeMs: 20_000 });
  return decoded.ok ? decoded.cache : undefined;
}

describe('agent node cache', () => {
  before(async () => {
    ds = adminDatastore();
    for (const kind of ['ipamblocks', 'ippools', 'ipamconfigs']) kubectl(['delete', kind, '--all']);
    clusterUID = (await ds.getNamespace('kube-system'))?.metadata.uid ?? '';
    applyNode(NODE, { zone: 'z1' });
    apply({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name: 'agent-nc-ns',
        labels: { team: 'a' },
        annotations: { 'ipam.blockipam.io/ippools': '["v4"]' },
      },
    });
    apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'p1',
        namespace: 'agent-nc-ns',
        annotations: { note: 'one', 'ipam.blockipam.io/ip-addrs': '["10.60.0.9"]' },
      },
      spec: { nodeName: NODE, containers: [{ name: 'c', image: 'busybox' }] },
    });
    apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'elsewhere', namespace: 'agent-nc-ns' },
      spec: { nodeName: 'other-node', containers: [{ name: 'c', image: 'busybox' }] },
    });
    await ds.pools.create({ metadata: { name: 'v4' }, spec: { cidr: '10.60.0.0/16' } });
    await ds.configs.create({ metadata: { name: 'default' }, spec: { minFreeAddressesPerNode: 4 } });
    dir = mkdtempSync(join(tmpdir(), 'node-cache-'));
    file = join(dir, 'run', 'node-cache.json');
    agent = startAgent(NODE, ['--node-cache-file', file]);
  });
  after(async () => {
    await agent.kill();
    kubectl(['delete', 'namespace', 'agent-nc-ns', '--wait=false']);
    kubectl(['delete', 'pod', '--all', '-n', 'agent-nc-ns', '--grace-period=0', '--force']);
    for (const kind of ['ipamblocks', 'ippools', 'ipamconfigs']) kubectl(['delete', kind, '--all']);
    kubectl(['delete', 'node', NODE]);
    ds.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('matches the API: blocks with resourceVersions, pools, config, pods, namespaces, node labels', async () => {
    // The agent pre-claims a block; the cache must then hold it as stored.
    const blocks = await eventually('a block', async () => {
      const got = await ds.blocks.list({ labelSelector: nodeBlocksSelector(NODE) });
      return got.length > 0 ? got : undefined;
    });
    const cache = await eventually('the cache with the block', () => {
      const c = readCache();
      return c && c.blocks.length === blocks.length ? c : undefined;
    });
    assert.deepEqual(
      cache.blocks.map((b) => [b.metadata.name, b.metadata.resourceVersion]),
      blocks.map((b) => [b.metadata.name, b.metadata.resourceVersion]),
    );
    assert.deepEqual(
      cache.pools.map((p) => p.metadata.name),
      ['v4'],
    );
    assert.equal(cache.config?.spec.minFreeAddressesPerNode, 4);
    const pod = await ds.getPod('agent-nc-ns', 'p1');
    assert.deepEqual(Object.keys(cache.pods), ['agent-nc-ns/p1'], 'only pods bound to this node');
    // kubectl apply stored its last-applied-configuration on both: the cache keeps neither.
    assert.ok(pod?.metadata.annotations?.['kubectl.kubernetes.io/last-applied-configuration']);
    assert.deepEqual(cache.pods['agent-nc-ns/p1'], {
      uid: pod?.metadata.uid,
      nodeName: NODE,
      annotations: { 'ipam.blockipam.io/ip-addrs': '["10.60.0.9"]' },
    });
    assert.deepEqual(cache.namespaces['agent-nc-ns']?.annotations, { 'ipam.blockipam.io/ippools': '["v4"]' });
    assert.equal(cache.namespaces['agent-nc-ns']?.labels.team, 'a');
    assert.equal(cache.node.labels.zone, 'z1');
    assert.equal(cache.cluster.uid, clusterUID);
    assert.equal(statSync(file).mode & 0o777, 0o600);
  });

  test('rewritten on change: a pod annotation, an allocation (new resourceVersion), node labels', async () => {
    const before = readCache();
    assert.ok(before);
    kubectl(['annotate', 'pod', 'p1', '-n', 'agent-nc-ns', 'ipam.blockipam.io/ippools=["v4"]']);
    await eventually('the new annotation', () =>
      readCache()?.pods['agent-nc-ns/p1']?.annotations['ipam.blockipam.io/ippools'] === '["v4"]'
        ? true
        : undefined,
    );
    const got = await autoAssign(ds, { handle: 'nc.c1.eth0', node: NODE, nodeLabels: { zone: 'z1' } });
    assert.equal(got.ok, true);
    const block = got.ok ? got.ipv4?.block : undefined;
    const stored = await ds.blocks.get(block ?? '');
    await eventually('the allocation in the cache', () => {
      const b = readCache()?.blocks.find((x) => x.metadata.name === block);
      return b?.metadata.resourceVersion === stored?.metadata.resourceVersion ? true : undefined;
    });
    applyNode(NODE, { zone: 'z2' });
    const after = await eventually('the new node label', () => {
      const c = readCache();
      return c?.node.labels.zone === 'z2' ? c : undefined;
    });
    assert.ok(after.generation > before.generation);
    assert.ok(after.heartbeatAtMs >= before.heartbeatAtMs);
  });
});
