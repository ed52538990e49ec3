// ipamctl check's leak confirmation against the real API server: on a real node the Pod object
// goes 1–5 s before the runtime's CNI DEL, so a suspected leak is reported only when its
// allocation is still held --confirm-after seconds later. The late DEL runs inside the wait (the
// injected sleep), so the race is reproduced exactly, without timing.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { autoAssign, handleOf, releaseByHandle } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import type { Report } from '../../cli/audit/report.ts';
import {
  cleanClusterHooks,
  createPod,
  deletePod,
  ipamctl,
  poolObject,
  realSleep,
  setPodIP,
  uniqueNamespace,
} from './cluster.ts';

const dir = mkdtempSync(join(tmpdir(), 'ipamctl-confirm-'));
const ns = uniqueNamespace('ipamctl-confirm');
let ds: KubeDatastore;

/** A pod on n1 with an address allocated through core (as the plugin's ADD does); returns its handle and uid. */
async function runningPod(name: string): Promise<{ handle: string; uid: string }> {
  const pod = await createPod(ds, { namespace: ns, name, node: 'n1' });
  const uid = pod.metadata.uid ?? '';
  const handle = handleOf('k8s-pod-network', `c-${name}`, 'eth0');
  const got = await autoAssign(ds, { handle, node: 'n1', pod: { namespace: ns, name, uid } });
  assert.ok(got.ok && got.ipv4, JSON.stringify(got));
  await setPodIP(ds, pod, got.ipv4.address);
  return { handle, uid };
}

function readReport(path: string): Report {
  return JSON.parse(readFileSync(path, 'utf8')) as Report;
}

describe('ipamctl check: a leak must survive --confirm-after (real API server)', () => {
  cleanClusterHooks({
    namespace: ns,
    nodes: ['n1'],
    onReady: (d) => (ds = d),
    setup: (d) => d.pools.create(poolObject('p4', '10.244.0.0/16')).then(() => undefined),
  });

  test('pod deleted, its CNI DEL arrives within the window: exit 0, nothing leaked', async () => {
    const { handle, uid } = await runningPod('web');
    await deletePod(ds, ns, 'web'); // the Pod object goes first; the allocation is still held
    const waits: number[] = [];
    const path = join(dir, 'late-del.json');
    const out = await ipamctl(['check', '--confirm-after', '2', '-o', path], {
      sleep: async (ms) => {
        waits.push(ms);
        // The runtime's DEL, as the plugin sends it: release by handle, for this node and pod UID.
        const done = await releaseByHandle(ds, handle, { node: 'n1', podUID: uid });
        assert.equal(done.released.length, 1);
      },
    });
    assert.equal(out.code, 0, out.stdout + out.stderr);
    assert.deepEqual(waits, [2000]);
    assert.match(out.stderr, /1 suspected leak\(s\): re-checking in 2 s/);
    assert.match(out.stdout, /Check complete: no problems found\./);
    assert.match(out.stdout, /0 of 1 still held \(1 released meanwhile/);
    const report = readReport(path);
    assert.deepEqual(report.leaked, []);
    assert.deepEqual(report.confirmation, { afterSeconds: 2, suspects: 1, released: 1 });
  });

  test('allocation still held after the window (real timer): leaked-pod-deleted, exit 1', async () => {
    await runningPod('gone');
    await deletePod(ds, ns, 'gone');
    const path = join(dir, 'leak.json');
    const out = await ipamctl(['check', '--confirm-after', '1', '-o', path], { sleep: realSleep });
    assert.equal(out.code, 1, out.stdout + out.stderr);
    const report = readReport(path);
    assert.deepEqual(Object.keys(report.byKind), ['leaked-pod-deleted']);
    assert.deepEqual(
      report.leaked.map((l) => [l.pod, l.reason]),
      [['gone', 'leaked-pod-deleted']],
    );
    assert.deepEqual(report.confirmation, { afterSeconds: 1, suspects: 1, released: 0 });
  });

  test('no suspect: no wait, whatever --confirm-after says', async () => {
    await runningPod('alive');
    const waits: number[] = [];
    const out = await ipamctl(['check', '--confirm-after', '600'], {
      sleep: (ms) => {
        waits.push(ms);
        return Promise.resolve();
      },
    });
    assert.equal(out.code, 0, out.stdout + out.stderr);
    assert.deepEqual(waits, []);
    assert.doesNotMatch(out.stderr, /suspected/);
  });

  test('the default window is 30 s; -q silences the notice but not the wait', async () => {
    await runningPod('quiet');
    await deletePod(ds, ns, 'quiet');
    const waits: number[] = [];
    const out = await ipamctl(['check', '-q'], {
      sleep: (ms) => {
        waits.push(ms);
        return Promise.resolve();
      },
    });
    assert.equal(out.code, 1, out.stdout + out.stderr);
    assert.deepEqual(waits, [30_000]);
    assert.equal(out.stderr, '');
  });

  test('--confirm-after must be an integer from 0 to 3600: else exit 2 naming the flag', async () => {
    for (const bad of ['-1', '3601', '1.5', 'soon']) {
      const out = await ipamctl(['check', '--confirm-after', bad]);
      assert.equal(out.code, 2, bad);
      assert.match(out.stderr, /--confirm-after must be an integer from 0 to 3600 \(seconds\)/, bad);
    }
  });
});
