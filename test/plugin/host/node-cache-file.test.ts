// Reading the node cache file and the remembered cluster UID: no request when the file is
// absent or the UID is remembered; one GET to learn it; re-learnt when a document names another
// cluster; every failure a reason, never a throw.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { buildNodeCache, encodeNodeCache } from 'blockipam/core';
import { readNodeCache, type NodeCacheReadOptions } from '../../../ipam-plugin/host/node-cache-file.ts';

const tmp = mkdtempSync(join(tmpdir(), 'bipam-ncfile-'));
after(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;

/** A fresh directory with a cache for `cluster`, and options whose API answers `apiUID`. */
function world(cluster: string, apiUID: string | Error = cluster) {
  const dir = join(tmp, String(n++));
  mkdirSync(dir);
  const file = join(dir, 'node-cache.json');
  writeFileSync(file, encodeNodeCache(buildNodeCacheFor(cluster)));
  const gets = { n: 0 };
  const options: NodeCacheReadOptions = {
    file,
    node: 'n1',
    maxAgeMs: 20_000,
    identity: { cacheDir: join(dir, 'cache'), server: 'https://127.0.0.1:6443', ca: Buffer.from('ca') },
    readClusterUID: () => {
      gets.n++;
      return apiUID instanceof Error ? Promise.reject(apiUID) : Promise.resolve(apiUID);
    },
  };
  return { file, options, gets };
}

describe('readNodeCache', () => {
  it('learns the cluster UID once (one GET), then reads with none', async () => {
    const w = world('uid-a');
    assert.equal((await readNodeCache(w.options)).ok, true);
    assert.equal(w.gets.n, 1);
    assert.equal((await readNodeCache(w.options)).ok, true);
    assert.equal(w.gets.n, 1);
  });

  it('re-learns when the document names another cluster than the remembered one', async () => {
    const w = world('uid-a', 'uid-b');
    const first = await readNodeCache(w.options); // learns uid-b: the cache is another cluster's
    assert.equal(first.ok ? 'ok' : first.reason, 'Cluster');
    writeFileSync(w.file, encodeNodeCache(buildNodeCacheFor('uid-c')));
    const api = { ...w.options, readClusterUID: () => Promise.resolve('uid-c') };
    const again = await readNodeCache(api); // remembered uid-b ≠ uid-c: asks, the API says uid-c
    assert.equal(again.ok, true);
  });

  it('gives a reason and sends nothing for a disabled, absent or unreadable cache', async () => {
    const w = world('uid-a');
    const reason = async (o: NodeCacheReadOptions): Promise<string> => {
      const r = await readNodeCache(o);
      return r.ok ? 'ok' : r.reason;
    };
    assert.equal(await reason({ ...w.options, maxAgeMs: 0 }), 'Disabled');
    assert.equal(await reason({ ...w.options, file: join(tmp, 'none.json') }), 'Absent');
    assert.equal(await reason({ ...w.options, file: tmp }), 'Unreadable'); // a directory
    assert.equal(w.gets.n, 0);
  });

  it('NoCluster when the cluster UID cannot be learnt', async () => {
    const w = world('uid-a', new Error('403 forbidden'));
    const r = await readNodeCache(w.options);
    assert.equal(r.ok ? 'ok' : r.reason, 'NoCluster');
    const empty = world('uid-a', '');
    const e = await readNodeCache(empty.options);
    assert.equal(e.ok ? 'ok' : e.reason, 'NoCluster');
  });
});

function buildNodeCacheFor(cluster: string) {
  return buildNodeCache({
    clusterUID: cluster,
    node: { metadata: { name: 'n1' } },
    heartbeatAtMs: Date.now(),
    generation: 2,
    writer: { name: 't', pid: 1 },
    blocks: [],
    config: null,
    pools: [],
    reservations: [],
    pods: [],
    namespaces: [],
  });
}
