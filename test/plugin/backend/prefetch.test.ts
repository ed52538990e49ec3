/**
 * Concurrent first ADDs on a fresh node claim one block (issue 9, 7c): the real dispatcher, a host
 * lock shared by both ADDs (in-process: helpers/host-lock.ts' processLock, as the real flock lock
 * is Bun-only) and core's allocator over one memory datastore. ADD2's affine-block LIST is
 * answered (empty: the node has no block yet) before ADD1 runs, and ADD2's other reads are held
 * until ADD1 has finished, so ADD2 takes a free lock (`waited` false) holding a LIST that no
 * longer shows the block ADD1 claimed — the interleaving a real multi-node cluster showed.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { MemoryDatastore, type Datastore, type IPPool } from 'blockipam/core';
import { createCoreBackend } from '../../../ipam-plugin/backend/core-backend.ts';
import { dispatch } from '../../../ipam-plugin/dispatch.ts';
import type { NetConf } from '../../../ipam-plugin/cni/netconf.ts';
import { processLock } from '../helpers/host-lock.ts';

const tmp = mkdtempSync(join(tmpdir(), 'bipam-prefetch-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

const pool: IPPool = {
  apiVersion: 'ipam.blockipam.io/v1alpha1',
  kind: 'IPPool',
  metadata: { name: 'p', creationTimestamp: '2026-01-01T00:00:00Z' },
  spec: { cidr: '10.70.0.0/16', blockSize: 26 },
};

/**
 * `target` with every method (nested stores included) bound to it and awaiting `before(path)`
 * first; `after(path)` runs once it has answered. `path`: e.g. "blocks.list", "getNode".
 */
function wrapped<T extends object>(
  target: T,
  before: (path: string) => Promise<void>,
  after: (path: string) => void,
  prefix = '',
): T {
  return new Proxy(target, {
    get: (t, key) => {
      const v: unknown = Reflect.get(t, key);
      const path = `${prefix}${String(key)}`;
      if (typeof v === 'object' && v !== null) return wrapped(v, before, after, `${path}.`);
      if (typeof v !== 'function') return v;
      return async (...args: unknown[]): Promise<unknown> => {
        await before(path);
        const r: unknown = await (v as (...a: unknown[]) => unknown).apply(t, args);
        after(path);
        return r;
      };
    },
  });
}

/**
 * A view of `ds` whose blocks calls are answered at once (`listed` resolves after the first
 * blocks LIST) and whose other reads (pools, config, reservations, the node) wait for `gate`.
 */
function heldReads(ds: Datastore, gate: Promise<void>): { view: Datastore; listed: Promise<void> } {
  let onListed: () => void = () => undefined;
  const listed = new Promise<void>((resolve) => (onListed = resolve));
  const view = wrapped(
    ds,
    (path) => (path.startsWith('blocks.') ? Promise.resolve() : gate),
    (path) => path === 'blocks.list' && onListed(),
  );
  return { view, listed };
}

function add(ds: Datastore, id: string): Promise<{ code: number; stdout: string }> {
  let stdout = '';
  const stdin = JSON.stringify({
    cniVersion: '1.1.0',
    name: 'net',
    type: 'ptp',
    ipam: {
      type: 'blockipam',
      nodeName: 'node-a',
      snapshotTtlMs: 0,
      cacheDir: join(tmp, id),
      lockFile: join(tmp, 'ipam.lock'), // one host lock for both ADDs
    },
  });
  return dispatch(
    {
      env: {
        CNI_COMMAND: 'ADD',
        CNI_CONTAINERID: id,
        CNI_NETNS: '/var/run/netns/x',
        CNI_IFNAME: 'eth0',
        CNI_PATH: '/opt/cni/bin',
      },
      readStdin: () => stdin,
      stdout: { write: (s: string) => (stdout += s) },
      stderr: { write: () => undefined },
    },
    {
      backend: (conf: NetConf) => Promise.resolve(createCoreBackend({ ds, conf, cacheKey: id })),
      ...processLock,
    },
  ).then((code) => ({ code, stdout }));
}

void describe('concurrent first ADDs on a fresh node', () => {
  void it('claim exactly one block when the second ADD listed before the first claimed', async () => {
    const ds = new MemoryDatastore({ pools: [pool] });
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const second = heldReads(ds, gate);
    const add2 = add(second.view, 'c2');
    await second.listed; // ADD2's LIST of the node's blocks is answered: none yet
    const r1 = await add(ds, 'c1'); // ADD1 runs to the end: claims a block
    assert.equal(r1.code, 0, r1.stdout);
    open();
    const r2 = await add2;
    assert.equal(r2.code, 0, r2.stdout);
    const blocks = await ds.blocks.list();
    assert.deepEqual(
      blocks.map((b) => b.spec.affinity),
      ['node-a'],
      `one block for the node, got ${blocks.map((b) => b.metadata.name).join(', ')}`,
    );
    const ips = [r1, r2].map((r) => (JSON.parse(r.stdout) as { ips: { address: string }[] }).ips[0]?.address);
    assert.notEqual(ips[0], ips[1]);
  });
});
