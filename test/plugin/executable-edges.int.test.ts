/**
 * The executable against the real API server on edge inputs: cache and log paths under /proc,
 * an oversized K8S_POD_NAME, default routes from the result's families, a pod that does not
 * exist, refused credentials and an untrusted certificate, a malformed prevResult on CHECK, a
 * log file in a missing directory, ipam.type and the route cap. (The in-process halves of these
 * checks live in cni/args.test.ts and cni/errors.test.ts.)
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { controlPlane } from '../helpers/control-plane.ts';
import {
  assertAdded,
  assertCniError,
  assertSilentSuccess,
  env,
  handle,
  NODE,
  setupSuite,
  type Suite,
} from './helpers/conformance.ts';
import { repoRoot } from './helpers/plugin-exe.ts';

type Ip = { address: string };

void describe('the executable on edge inputs (real API server)', () => {
  let s: Suite;
  before(() => (s = setupSuite()));
  after(() => s?.teardown());
  const add = (id: string, conf: string, extra: Record<string, string> = {}) =>
    s.run(env('ADD', id, extra), conf);
  const del = (id: string, conf = s.conf('1.0.0')) => s.run(env('DEL', id), conf);

  void it('cacheDir and logFile under /proc: ADD completes (no 100% CPU loop)', async () => {
    const t0 = Date.now();
    // The lock file keeps a usable path (its default is under cacheDir; an unusable lock file is
    // code 5, runtime.int.test.ts): unusable caches only cost their reads.
    const conf = s.conf('1.0.0', {
      cacheDir: '/proc/nope/cache',
      logFile: '/proc/nope/p.log',
      lockFile: join(s.tmp, 'edges-ipam.lock'),
    });
    const r = await Promise.race([
      add('td1', conf),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('ADD hung')), 20_000).unref()),
    ]);
    assertAdded(r);
    assert.ok(Date.now() - t0 < 20_000);
    assertSilentSuccess(await del('td1', conf));
  });
  void it('a 100 000-character K8S_POD_NAME: code 4 naming the key, no API text', async () => {
    const r = await add('td2', s.conf('1.0.0'), {
      CNI_ARGS: `K8S_POD_NAMESPACE=default;K8S_POD_NAME=${'a'.repeat(100_000)}`,
    });
    const doc = assertCniError(r, 4);
    assert.match(`${String(doc.msg)} ${String(doc.details)}`, /K8S_POD_NAME/);
    assert.ok(r.stdout.length < 1000);
    assert.equal(s.fx.allocations().has(handle('td2')), false);
  });
  void it('static v4 + v6 with assignIPv6 false gets both default routes', async () => {
    const r = assertAdded(
      await add('td3', s.conf('1.0.0', {}, { runtimeConfig: { ips: ['10.100.77.171', 'fd00:100::9af1'] } })),
    );
    assert.deepEqual(
      (r.ips as Ip[]).map((i) => i.address.split('/')[0]),
      ['10.100.77.171', 'fd00:100::9af1'],
    );
    assert.deepEqual(r.routes, [{ dst: '0.0.0.0/0' }, { dst: '::/0' }]);
    assertSilentSuccess(await del('td3'));
  });
  void it('a pod that does not exist: allocation without a pod reference; ipamctl check reports no leak', async () => {
    s.fx.apply({ apiVersion: 'v1', kind: 'Node', metadata: { name: NODE } });
    const r = await add('td4', s.conf('1.0.0'), {
      CNI_ARGS: 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=ghost-static-pod-node1',
    });
    assertAdded(r);
    assert.match(r.stderr, /pod not found/);
    const alloc = s.fx
      .blocks()
      .flatMap((b) => Object.values(b.spec.allocations))
      .find((a) => a.handle === handle('td4'));
    assert.ok(alloc, 'allocation recorded');
    assert.equal(alloc.pod, undefined, JSON.stringify(alloc));
    const check = spawnSync(
      process.execPath,
      [join(repoRoot, 'cli', 'main.ts'), 'check', '--kubeconfig', controlPlane().adminKubeconfig],
      { encoding: 'utf8', timeout: 60_000 },
    );
    const out = check.stdout + check.stderr;
    assert.doesNotMatch(out, /ghost-static-pod-node1/, out);
    assert.doesNotMatch(out, new RegExp(`td4`), out);
    assertSilentSuccess(await del('td4'));
  });
  void it('403 (no RBAC) and an untrusted certificate: code 105 naming the cause', async () => {
    const forbidden = assertCniError(
      await add('td5', s.conf('1.0.0', { kubeconfig: controlPlane().devKubeconfig })),
      105,
    );
    assert.match(String(forbidden.details), /403/);
    const cp = controlPlane();
    const untrusted = join(s.tmp, 'untrusted-kubeconfig');
    writeFileSync(
      untrusted,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters: [{name: c, cluster: {server: "' + cp.apiUrl + '"}}]',
        'users: [{name: u, user: {token: "' + cp.adminToken + '"}}]',
        'contexts: [{name: x, context: {cluster: c, user: u}}]',
        'current-context: x',
        '',
      ].join('\n'),
    );
    const tls = assertCniError(await add('td5b', s.conf('1.0.0', { kubeconfig: untrusted })), 105);
    assert.match(String(tls.details), /TLS|certificate/);
  });
  void it('CHECK with a malformed prevResult: code 7 naming the field', async () => {
    assertAdded(await add('td6', s.conf('1.0.0')));
    const r = await s.run(env('CHECK', 'td6'), s.conf('1.0.0', {}, { prevResult: { ips: 'x' } }));
    const doc = assertCniError(r, 7);
    assert.match(String(doc.details), /prevResult\.ips: must be array/);
    const r2 = await s.run(
      env('CHECK', 'td6'),
      s.conf('1.0.0', {}, { prevResult: { cniVersion: '1.0.0', ips: [{ address: 5 }] } }),
    );
    assert.match(String(assertCniError(r2, 7).details), /prevResult\.ips\[0\]\.address/);
    // DEL stays best effort with the same prevResult
    assertSilentSuccess(await s.run(env('DEL', 'td6'), s.conf('1.0.0', {}, { prevResult: { ips: 'x' } })));
  });
  void it('logFile in a missing directory: no directory is created, ADD succeeds', async () => {
    const dir = join(s.tmp, 'nonexistent', 'dir');
    const conf = s.conf('1.0.0', { logFile: join(dir, 'p.log') });
    const r = await add('td7', conf);
    assertAdded(r);
    assert.equal(existsSync(join(s.tmp, 'nonexistent')), false);
    assert.match(r.stderr, /cannot write log file/);
    assertSilentSuccess(await del('td7', conf));
  });
  void it('ipam.type must be "blockipam"; more than 1024 routes refused', async () => {
    const wrong = assertCniError(await add('td8', s.conf('1.0.0', { type: 'host-local' })), 7);
    assert.match(String(wrong.details), /ipam\.type/);
    const routes = Array.from({ length: 1025 }, () => ({ dst: '10.0.0.0/8' }));
    const many = assertCniError(await add('td8b', s.conf('1.0.0', { routes })), 7);
    assert.match(String(many.details), /ipam\.routes/);
  });
});
