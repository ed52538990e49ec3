/**
 * Regression tests for defects a tester found (one `it` per item): /proc cache and log paths,
 * invalid K8S_POD_* values, default routes from the result's families, pods that do not exist,
 * auth/TLS failures, malformed prevResult on CHECK, log directories, ipam.type and route caps.
 * Executable + real API server, except the error mapping (in-process).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { InvalidError } from '../../core/errors/invalid.ts';
import { ApiError } from '../../core/errors/api-error.ts';
import { apiFailure } from '../../ipam-plugin/errors.ts';
import { parseCniArgs } from '../../ipam-plugin/cni-args.ts';
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

void describe('tester defects (in-process)', () => {
  void it('item 2: K8S_POD_* values are validated, code 4 naming the key', () => {
    const bad: [string, string][] = [
      ['K8S_POD_NAME', 'a'.repeat(100_000)],
      ['K8S_POD_NAME', 'Upper_Case'],
      ['K8S_POD_NAMESPACE', 'a'.repeat(64)],
      ['K8S_POD_NAMESPACE', 'a.b'],
      ['K8S_POD_INFRA_CONTAINER_ID', 'x'.repeat(1000)],
      ['K8S_POD_UID', 'bad uid'],
    ];
    for (const [k, v] of bad) {
      assert.throws(
        () => parseCniArgs(`IgnoreUnknown=1;${k}=${v}`),
        (e: { code?: number; details?: string; message?: string }) =>
          e.code === 4 && `${e.message} ${e.details}`.includes(k),
        k,
      );
    }
    const ok = parseCniArgs(
      'K8S_POD_NAMESPACE=kube-system;K8S_POD_NAME=coredns-5d78c9869d-abcde.x;K8S_POD_UID=0f1e2d3c-aaaa-bbbb-cccc-111122223333;K8S_POD_INFRA_CONTAINER_ID=abc123',
    );
    assert.equal(ok.podName, 'coredns-5d78c9869d-abcde.x');
  });
  void it('item 2/5: API 422 → 106 (short message); 401/403 and untrusted TLS → 105', () => {
    const e422 = apiFailure(new InvalidError(`Pod "${'a'.repeat(5000)}" is invalid`, 422));
    assert.equal(e422?.code, 106);
    assert.ok((e422?.details.length ?? 0) < 400);
    assert.equal(apiFailure(new ApiError('GET /x: HTTP 401: Unauthorized', 401))?.code, 105);
    assert.equal(apiFailure(new ApiError('GET /x: HTTP 403: forbidden', 403))?.code, 105);
    assert.equal(
      apiFailure(new ApiError('GET /x: self-signed certificate in certificate chain', 0))?.code,
      105,
    );
    assert.equal(apiFailure(new ApiError('GET /x: HTTP 405: nope', 405)), undefined);
  });
});

void describe('tester defects (executable, real API server)', () => {
  let s: Suite;
  before(() => (s = setupSuite()));
  after(() => s?.teardown());
  const add = (id: string, conf: string, extra: Record<string, string> = {}) =>
    s.run(env('ADD', id, extra), conf);
  const del = (id: string, conf = s.conf('1.0.0')) => s.run(env('DEL', id), conf);

  void it('item 1: cacheDir and logFile under /proc: ADD completes (no 100% CPU loop)', async () => {
    const t0 = Date.now();
    const conf = s.conf('1.0.0', { cacheDir: '/proc/nope/cache', logFile: '/proc/nope/p.log' });
    const r = await Promise.race([
      add('td1', conf),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('ADD hung')), 20_000).unref()),
    ]);
    assertAdded(r);
    assert.ok(Date.now() - t0 < 20_000);
    assertSilentSuccess(await del('td1', conf));
  });
  void it('item 2: a 100 000-character K8S_POD_NAME: code 4 naming the key, no API text', async () => {
    const r = await add('td2', s.conf('1.0.0'), {
      CNI_ARGS: `K8S_POD_NAMESPACE=default;K8S_POD_NAME=${'a'.repeat(100_000)}`,
    });
    const doc = assertCniError(r, 4);
    assert.match(`${String(doc.msg)} ${String(doc.details)}`, /K8S_POD_NAME/);
    assert.ok(r.stdout.length < 1000);
    assert.equal(s.fx.allocations().has(handle('td2')), false);
  });
  void it('item 3: static v4 + v6 with assignIPv6 false gets both default routes', async () => {
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
  void it('item 4: a pod that does not exist: allocation without a pod reference; ipamctl check reports no leak', async () => {
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
  void it('item 5: 403 (no RBAC) and an untrusted certificate: code 105 naming the cause', async () => {
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
  void it('item 6: CHECK with a malformed prevResult: code 7 naming the field', async () => {
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
  void it('item 7: logFile in a missing directory: no directory is created, ADD succeeds', async () => {
    const dir = join(s.tmp, 'nonexistent', 'dir');
    const conf = s.conf('1.0.0', { logFile: join(dir, 'p.log') });
    const r = await add('td7', conf);
    assertAdded(r);
    assert.equal(existsSync(join(s.tmp, 'nonexistent')), false);
    assert.match(r.stderr, /cannot write log file/);
    assertSilentSuccess(await del('td7', conf));
  });
  void it('item 8: ipam.type must be "blockipam"; more than 1024 routes refused', async () => {
    const wrong = assertCniError(await add('td8', s.conf('1.0.0', { type: 'host-local' })), 7);
    assert.match(String(wrong.details), /ipam\.type/);
    const routes = Array.from({ length: 1025 }, () => ({ dst: '10.0.0.0/8' }));
    const many = assertCniError(await add('td8b', s.conf('1.0.0', { routes })), 7);
    assert.match(String(many.details), /ipam\.routes/);
  });
});
