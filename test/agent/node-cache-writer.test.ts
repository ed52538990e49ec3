// The node cache file as the writer leaves it on the host: root-only (0600) in a directory only
// its owner may write, replacing an older agent's 0644 file, and never written into a directory
// others could swap it in. The state is a fake seeded from plain objects.
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { decodeNodeCache } from 'blockipam/core';
import type { Pod } from 'blockipam/core';
import type { Logger } from '../../block-controller/shared/index.ts';
import type { AgentMetrics } from '../../block-controller/agent/metrics.ts';
import { NodeCacheWriter } from '../../block-controller/agent/node-cache-writer.ts';
import type { AgentState } from '../../block-controller/agent/state.ts';

const NODE = 'n1';
const CLUSTER = 'cluster-uid';
const T0 = Date.parse('2026-12-01T08:00:00Z');

const pod: Pod = {
  metadata: {
    namespace: 'ns',
    name: 'p',
    uid: 'u1',
    annotations: {
      'kubectl.kubernetes.io/last-applied-configuration': '{"env":[{"name":"TOKEN","value":"s3cret"}]}',
      'ipam.blockipam.io/ippools': '["v4"]',
    },
  },
  spec: { nodeName: NODE },
};

/** A synced, connected state holding one node, one pod and its namespace. */
function fakeState(): AgentState {
  return {
    node: NODE,
    synced: true,
    connected: true,
    onChange: () => undefined,
    nodeObject: () => ({ metadata: { name: NODE, uid: 'node-uid' } }),
    clusterUID: () => CLUSTER,
    nodeBlocks: () => [],
    config: () => undefined,
    pools: () => [],
    reservations: () => [],
    pods: () => [pod],
    namespaces: () => [{ metadata: { name: 'ns', uid: 'ns-uid' } }],
  } as unknown as AgentState;
}

let dir: string;
let results: string[];
let errors: string[];

/** Writes once into `file` and stops. */
async function writeOnce(file: string): Promise<void> {
  const writer = new NodeCacheWriter({
    path: file,
    state: fakeState(),
    log: { error: (message: string) => errors.push(message) } as unknown as Logger,
    metrics: {
      cacheWrites: { inc: (labels: { result: string }) => results.push(labels.result) },
    } as unknown as AgentMetrics,
    clock: () => T0,
    heartbeatMs: 3_600_000,
  });
  try {
    await writer.write();
  } finally {
    await writer.stop();
  }
}

const mode = (path: string): number => statSync(path).mode & 0o7777;

describe('node cache writer: the file on the host', () => {
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'node-cache-writer-'));
    results = [];
    errors = [];
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('a new file is 0600 in a new 0700 directory, with only the allocation annotations', async () => {
    const file = join(dir, 'run', 'blockipam', 'node-cache.json');
    await writeOnce(file);
    assert.deepEqual(results, ['ok']);
    assert.equal(mode(file), 0o600);
    assert.equal(mode(join(dir, 'run', 'blockipam')), 0o700);
    const text = readFileSync(file, 'utf8');
    assert.equal(text.includes('s3cret'), false);
    const out = decodeNodeCache(text, { clusterUID: CLUSTER, node: NODE, nowMs: T0, maxAgeMs: 20_000 });
    assert.ok(out.ok, out.ok ? '' : out.message);
    assert.deepEqual(out.cache.pods['ns/p']?.annotations, { 'ipam.blockipam.io/ippools': '["v4"]' });
  });

  it('an older agent’s 0644 file is replaced by a 0600 one; an existing 0755 directory is kept', async () => {
    const sub = join(dir, 'run');
    mkdirSync(sub, { mode: 0o755 });
    chmodSync(sub, 0o755);
    const file = join(sub, 'node-cache.json');
    writeFileSync(file, '{"old":"every annotation"}', { mode: 0o644 });
    chmodSync(file, 0o644);
    const inode = statSync(file).ino;
    await writeOnce(file);
    assert.deepEqual(results, ['ok']);
    assert.equal(mode(file), 0o600);
    assert.notEqual(statSync(file).ino, inode, 'a new file (rename), not the old one rewritten');
    assert.equal(readFileSync(file, 'utf8').includes('every annotation'), false);
    assert.equal(mode(sub), 0o755);
  });

  // group- or world-writable: another user could swap the file the plugin trusts
  for (const dirMode of [0o777, 0o775, 0o1777]) {
    it(`not written into a directory of mode ${dirMode.toString(8)}`, async () => {
      const sub = join(dir, 'open');
      mkdirSync(sub);
      chmodSync(sub, dirMode);
      const file = join(sub, 'node-cache.json');
      await writeOnce(file);
      assert.deepEqual(results, ['error']);
      assert.deepEqual(errors, ['node cache write failed']);
      assert.throws(() => statSync(file), { code: 'ENOENT' });
    });
  }
});
