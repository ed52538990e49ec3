// ipamctl release against the real API server: only what every report calls leaked and is still
// leaked now; stale reports release nothing; reports of another cluster are refused; nothing
// changes without --yes.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { assignIP, autoAssign, handleOf, releaseByHandle } from 'blockipam/core';
import type { IPAMBlock } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import type { LeakedAllocation } from '../../cli/audit/problems.ts';
import type { Report } from '../../cli/audit/report.ts';
import { applyPlan } from '../../cli/release/apply.ts';
import {
  blockObject,
  createPod,
  deletePod,
  ipamctl,
  poolObject,
  setPodIP,
  uniqueNamespace,
  cleanClusterHooks,
} from './cluster.ts';

const dir = mkdtempSync(join(tmpdir(), 'ipamctl-release-'));
const ns = uniqueNamespace('ipamctl-release');
let ds: KubeDatastore;

async function report(name: string): Promise<string> {
  const path = join(dir, `${name}.json`);
  const out = await ipamctl(['check', '-o', path]);
  assert.ok(out.code === 0 || out.code === 1, out.stderr);
  return path;
}

/** The handles allocated in block 10-244-0-0-26 by ordinal. */
async function allocations(): Promise<Record<string, string>> {
  const block = await ds.blocks.get('10-244-0-0-26');
  return Object.fromEntries(Object.entries(block?.spec.allocations ?? {}).map(([k, a]) => [k, a.handle]));
}

/** Seeds one block on n1 with two allocations of deleted pods (ordinals 7 and 8). */
async function seedTwoLeaks(): Promise<void> {
  await ds.pools.create(poolObject('p4', '10.244.0.0/16'));
  const gone = (ordinal: number, name: string) => ({
    ordinal,
    handle: `net.${name}.eth0`,
    node: 'n1',
    namespace: ns,
    pod: name,
    podUID: `uid-${name}`,
  });
  await ds.blocks.create(
    blockObject({
      cidr: '10.244.0.0/26',
      pool: 'p4',
      affinity: 'n1',
      allocations: [gone(7, 'a'), gone(8, 'b')],
    }),
  );
}

describe('ipamctl release (real API server)', () => {
  cleanClusterHooks({ namespace: ns, nodes: ['n1'], onReady: (d) => (ds = d) });

  test('without --yes: prints the plan, exits 3, changes nothing; with --yes releases, and check is clean', async () => {
    await seedTwoLeaks();
    const r1 = await report('r1');
    const dry = await ipamctl(['release', '--from-report', r1]);
    assert.equal(dry.code, 3);
    assert.match(dry.stdout, /Would release 2 allocation\(s\):/);
    assert.match(dry.stdout, /10\.244\.0\.7 +10-244-0-0-26 +net\.a\.eth0 +1001/);
    assert.match(dry.stderr, /Nothing was changed/);
    assert.deepEqual(await allocations(), { 7: 'net.a.eth0', 8: 'net.b.eth0' });
    const done = await ipamctl(['release', '--from-report', r1, '--yes']);
    assert.equal(done.code, 0, done.stdout + done.stderr);
    assert.match(done.stdout, /Released 2 of 2\./);
    assert.deepEqual(await allocations(), {});
    assert.equal((await ipamctl(['check'])).code, 0);
  });

  test('releases only what EVERY report calls leaked', async () => {
    await seedTwoLeaks();
    // r1 sees only the leak at .7: the pod of .8 still exists then.
    const b = await createPod(ds, { namespace: ns, name: 'b', node: 'n1' });
    const block = await ds.blocks.get('10-244-0-0-26');
    assert.ok(block?.spec.allocations[8]);
    block.spec.allocations[8] = { ...block.spec.allocations[8], podUID: b.metadata.uid ?? '' };
    await ds.blocks.update(block);
    const r1 = await report('every-1');
    await deletePod(ds, ns, 'b');
    const r2 = await report('every-2');
    const leaked = (path: string) =>
      (JSON.parse(readFileSync(path, 'utf8')) as Report).leaked.map((l) => l.address).sort();
    assert.deepEqual(leaked(r1), ['10.244.0.7']);
    assert.deepEqual(leaked(r2), ['10.244.0.7', '10.244.0.8']);
    const out = await ipamctl(['release', '--from-report', r1, r2, '--yes']);
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stdout, /Released 1 of 1\./);
    assert.deepEqual(await allocations(), { 8: 'net.b.eth0' });
  });

  test('a stale report (address released and re-allocated to another pod since) releases nothing', async () => {
    await ds.pools.create(poolObject('p4', '10.244.0.0/16'));
    const a = await createPod(ds, { namespace: ns, name: 'a', node: 'n1' });
    const handleA = handleOf('k8s-pod-network', 'ca', 'eth0');
    const got = await autoAssign(ds, {
      handle: handleA,
      node: 'n1',
      pod: { namespace: ns, name: 'a', uid: a.metadata.uid ?? '' },
    });
    assert.ok(got.ok && got.ipv4);
    const address = got.ipv4.address;
    await deletePod(ds, ns, 'a');
    const stale = await report('stale');
    assert.deepEqual(
      (JSON.parse(readFileSync(stale, 'utf8')) as Report).leaked.map((l) => l.address),
      [address],
    );
    // Meanwhile the leak is cleaned up and the same address handed to pod b.
    await releaseByHandle(ds, handleA);
    const b = await createPod(ds, { namespace: ns, name: 'b', node: 'n1' });
    const handleB = handleOf('k8s-pod-network', 'cb', 'eth0');
    const again = await assignIP(ds, {
      handle: handleB,
      node: 'n1',
      pod: { namespace: ns, name: 'b', uid: b.metadata.uid ?? '' },
      addresses: [address],
    });
    assert.ok(again.ok, JSON.stringify(again));
    await setPodIP(ds, b, address);
    const out = await ipamctl(['release', '--from-report', stale, '--yes']);
    assert.equal(out.code, 0, out.stderr);
    assert.match(
      out.stdout,
      new RegExp(
        `skip ${address.replace(/\./g, '\\.')} .*no longer allocated with that handle and sequence number`,
      ),
    );
    assert.match(out.stdout, /Nothing to release\./);
    const owner = await ipamctl(['show', '--ip', address, '-o', 'json']);
    assert.equal((JSON.parse(owner.stdout) as { owners: { handle: string }[] }).owners[0]?.handle, handleB);
  });

  // applyPlan after the re-check: the write's preconditions refuse an entry changed since, and say which.
  const changed: [string, (block: IPAMBlock, a: LeakedAllocation) => LeakedAllocation, RegExp][] = [
    [
      // as if .7 was released and handed out again (same handle, next sequence) in between
      'sequence',
      (block, a) => {
        block.spec.sequence += 1;
        block.spec.allocations[7] = { ...block.spec.allocations[7]!, sequence: block.spec.sequence };
        return a;
      },
      /: the write's preconditions refused it: sequence number is now 1003, not 1001 \(re-allocated\)/,
    ],
    [
      'pod UID',
      (_, a) => ({ ...a, podUID: 'not-the-recorded-uid' }),
      /: .*pod UID is uid-a, not not-the-recorded-uid/,
    ],
  ];
  for (const [what, change, message] of changed)
    test(`the write carries its preconditions: an entry whose ${what} changed after the re-check is left alone`, async () => {
      await seedTwoLeaks();
      const [a, b] = (JSON.parse(readFileSync(await report(`race-${what}`), 'utf8')) as Report).leaked;
      const block = await ds.blocks.get('10-244-0-0-26');
      assert.ok(a && b && block);
      const planned = change(block, a);
      await ds.blocks.update(block);
      let stdout = '';
      const out = { write: (t: string) => (stdout += t) };
      const code = await applyPlan(ds, [planned, b], { argv: [], env: {}, stdout: out, stderr: out });
      assert.equal(code, 1);
      assert.match(
        stdout,
        new RegExp(`not released 10\\.244\\.0\\.7 \\(IPAMBlock 10-244-0-0-26\\)${message.source}`),
      );
      assert.match(stdout, /Released 1 of 2\./);
      assert.deepEqual(await allocations(), { 7: 'net.a.eth0' });
    });

  test('a report from another cluster is refused and nothing is released', async () => {
    await seedTwoLeaks();
    const r1 = await report('foreign');
    const doc = JSON.parse(readFileSync(r1, 'utf8')) as Report;
    doc.cluster.kubeSystemUID = '00000000-0000-0000-0000-000000000000';
    const foreign = join(dir, 'foreign-edited.json');
    writeFileSync(foreign, JSON.stringify(doc));
    const out = await ipamctl(['release', '--from-report', r1, foreign, '--yes']);
    assert.equal(out.code, 2);
    assert.match(
      out.stderr,
      /foreign-edited\.json was taken on another cluster \(kube-system uid 00000000-.*Nothing was released\./,
    );
    assert.deepEqual(await allocations(), { 7: 'net.a.eth0', 8: 'net.b.eth0' });
  });

  test('--ip refuses an address whose pod is alive (unless --force) and releases a leaked one with --yes', async () => {
    await seedTwoLeaks();
    const live = await createPod(ds, { namespace: ns, name: 'live', node: 'n1', ip: '10.244.0.20' });
    const block = await ds.blocks.get('10-244-0-0-26');
    assert.ok(block);
    block.spec.sequence += 1;
    block.spec.allocations[20] = {
      handle: 'net.live.eth0',
      node: 'n1',
      namespace: ns,
      pod: 'live',
      podUID: live.metadata.uid ?? '',
      allocatedAt: '2026-01-01T00:00:00Z',
      sequence: block.spec.sequence,
    };
    await ds.blocks.update(block);
    const refused = await ipamctl(['release', '--ip', '10.244.0.20', '--yes']);
    assert.equal(refused.code, 1);
    assert.match(
      refused.stdout,
      new RegExp(
        `skip 10\\.244\\.0\\.20 .*its pod ${ns}/live exists \\(uid ${live.metadata.uid ?? ''}\\) \\(--force overrides\\)`,
      ),
    );
    const dry = await ipamctl(['release', '--ip', '10.244.0.7']);
    assert.equal(dry.code, 3);
    assert.equal((await allocations())[7], 'net.a.eth0');
    const done = await ipamctl(['release', '--ip', '10.244.0.7', '--yes']);
    assert.equal(done.code, 0, done.stderr);
    assert.deepEqual(await allocations(), { 8: 'net.b.eth0', 20: 'net.live.eth0' });
    const none = await ipamctl(['release', '--ip', '10.244.0.7', '--yes']);
    assert.equal(none.code, 0);
    assert.match(none.stdout, /10\.244\.0\.7 is not allocated: nothing to release\./);
  });
  // Defect 1: a hand-edited report must not free a live pod's allocation. Each case edits a genuine
  // leaked entry to point at pend's allocation and rewrites the owner fields.
  const tamperings: [string, (leak: LeakedAllocation, uid: string) => LeakedAllocation][] = [
    // owner fields removed, node set to one that does not exist
    [
      'no pod, nonexistent node',
      (leak) => {
        const { pod: _p, podUID: _u, namespace: _n, ...rest } = leak;
        return { ...rest, node: 'nonexistent-node', reason: 'leaked-node-deleted' };
      },
    ],
    // a nonexistent pod name carrying pend's real UID
    ['nonexistent pod name, real UID', (leak, uid) => ({ ...leak, pod: 'no-such-pod', podUID: uid })],
  ];
  for (const [name, tamper] of tamperings) {
    test(`a tampered report (${name}) cannot release a live pod's allocation`, async () => {
      await seedTwoLeaks();
      const pend = await createPod(ds, { namespace: ns, name: 'pend', node: 'n1' });
      const got = await autoAssign(ds, {
        handle: handleOf('k8s-pod-network', 'cpend', 'eth0'),
        node: 'n1',
        pod: { namespace: ns, name: 'pend', uid: pend.metadata.uid ?? '' },
      });
      assert.ok(got.ok && got.ipv4);
      const genuine = JSON.parse(readFileSync(await report(`genuine-${name}`), 'utf8')) as Report;
      const leak = genuine.leaked.find((l) => l.address === '10.244.0.7');
      assert.ok(leak);
      const edited = tamper(
        {
          ...leak,
          address: got.ipv4.address,
          ordinal: got.ipv4.ordinal,
          handle: handleOf('k8s-pod-network', 'cpend', 'eth0'),
          sequence: got.ipv4.sequence,
        },
        pend.metadata.uid ?? '',
      );
      const path = join(dir, `tamper-${name.replace(/\W+/g, '-')}.json`);
      writeFileSync(path, JSON.stringify({ ...genuine, leaked: [edited] }));
      const out = await ipamctl(['release', '--from-report', path, '--yes']);
      assert.equal(out.code, 0, out.stdout + out.stderr);
      assert.match(out.stdout, new RegExp(`skip ${got.ipv4.address.replace(/\./g, '\\.')} .*pod ${ns}/pend`));
      assert.match(out.stdout, /Nothing to release\./);
      assert.equal((await allocations())[got.ipv4.ordinal], handleOf('k8s-pod-network', 'cpend', 'eth0'));
    });
  }

  test('a report entry whose address is not its block + ordinal is skipped', async () => {
    await seedTwoLeaks();
    const genuine = JSON.parse(readFileSync(await report('mismatch'), 'utf8')) as Report;
    const leaked = genuine.leaked.map((l) =>
      l.address === '10.244.0.7' ? { ...l, address: '10.244.0.9' } : l,
    );
    const path = join(dir, 'mismatch-edited.json');
    writeFileSync(path, JSON.stringify({ ...genuine, leaked }));
    const out = await ipamctl(['release', '--from-report', path, '--yes']);
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stdout, /skip 10\.244\.0\.9 .*is not ordinal 7 of IPAMBlock 10-244-0-0-26/);
    assert.match(out.stdout, /Released 1 of 1\./);
    assert.deepEqual(await allocations(), { 7: 'net.a.eth0' });
  });

  test('an allocation on a reserved ordinal (corrupt block) is released by --ip and --from-report; the ordinal never enters freed', async () => {
    await ds.pools.create(poolObject('p4', '10.244.0.0/16'));
    // Ordinal 0 (network) and 1 (gateway) allocated by hand, their nodes gone: invalid-block and leaked.
    const corrupt = [
      { ordinal: 0, handle: 'net.z.eth0', node: 'gone-node' },
      { ordinal: 1, handle: 'net.g.eth0', node: 'gone-node' },
    ];
    await ds.blocks.create(
      blockObject({ cidr: '10.244.0.0/26', pool: 'p4', affinity: 'n1', allocations: corrupt }),
    );
    const r1 = await report('reserved-1');
    const r2 = await report('reserved-2');
    const byIp = await ipamctl(['release', '--ip', '10.244.0.0', '--yes']);
    assert.equal(byIp.code, 0, byIp.stdout + byIp.stderr);
    assert.match(byIp.stdout, /Released 1 of 1\./);
    const byReport = await ipamctl(['release', '--from-report', r1, r2, '--yes']);
    assert.equal(byReport.code, 0, byReport.stdout + byReport.stderr);
    assert.match(byReport.stdout, /skip 10\.244\.0\.0 .*no longer allocated/);
    assert.match(byReport.stdout, /Released 1 of 1\./);
    const block = await ds.blocks.get('10-244-0-0-26');
    assert.deepEqual(block?.spec.allocations, {});
    assert.deepEqual(block?.spec.freed, []);
    const after = await ipamctl(['check']);
    assert.equal(after.code, 0, after.stdout);
  });

  test('--ip with --block: a block that does not exist or does not contain the address is exit 2', async () => {
    await seedTwoLeaks();
    await ds.blocks.create(blockObject({ cidr: '10.244.1.0/26', pool: 'p4', affinity: 'n1' }));
    const missing = await ipamctl(['release', '--ip', '10.244.0.7', '--block', 'nonexistent', '--yes']);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /no such IPAMBlock nonexistent/);
    const elsewhere = await ipamctl(['release', '--ip', '10.244.0.7', '--block', '10-244-1-0-26', '--yes']);
    assert.equal(elsewhere.code, 2);
    assert.match(elsewhere.stderr, /10\.244\.0\.7 is not in IPAMBlock 10-244-1-0-26 \(10\.244\.1\.0\/26\)/);
    assert.deepEqual(await allocations(), { 7: 'net.a.eth0', 8: 'net.b.eth0' });
  });

  // The schema's every refusal: report.test.ts; here, the command's path (exit 2, nothing released).
  test('a report with a null entry is refused with a clear message, nothing released', async () => {
    await seedTwoLeaks();
    const genuine = JSON.parse(readFileSync(await report('nulls'), 'utf8')) as Report;
    const withNull = join(dir, 'null-entry.json');
    writeFileSync(withNull, JSON.stringify({ ...genuine, leaked: [null, ...genuine.leaked] }));
    const out = await ipamctl(['release', '--from-report', withNull, '--yes']);
    assert.equal(out.code, 2);
    assert.match(
      out.stderr,
      /null-entry\.json is not an ipamctl check report: leaked entry 1 is not an object/,
    );
    assert.doesNotMatch(out.stderr, /TypeError/);
    assert.deepEqual(await allocations(), { 7: 'net.a.eth0', 8: 'net.b.eth0' });
  });
});
