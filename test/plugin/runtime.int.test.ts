/**
 * What the executable's runtime (Bun, scripts/build-plugin.ts) must do the way Node does, shown
 * with the executable against the real API server: TLS through Bun's fetch with each kubeconfig
 * credential form (client certificate, bearer token, insecure-skip-tls-verify) and each way it
 * can be refused; the host lock (flock(2) on ipam.lockFile: a holder makes ADD wait and fail
 * with 11, SIGKILL frees it, an unusable lock file is code 5). docs/design-plugin.md "Runtime".
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, copyFileSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { holdLock, logged } from './helpers/host-lock.ts';
import { controlPlane } from '../helpers/control-plane.ts';
import {
  assertAdded,
  assertCniError,
  assertSilentSuccess,
  env,
  setupSuite,
  type Suite,
} from './helpers/conformance.ts';
import { pluginPath, repoRoot } from './helpers/plugin-exe.ts';

/** Runs openssl; throws with its stderr on failure. */
function openssl(args: readonly string[]): void {
  const r = spawnSync('openssl', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr}`);
}

/** A client key + certificate for `subject`, signed by caCrt/caKey (or self-signed when absent). */
function clientCert(dir: string, tag: string, subject: string, ca?: { crt: string; key: string }) {
  const key = join(dir, `${tag}.key`);
  const crt = join(dir, `${tag}.crt`);
  openssl(['genrsa', '-out', key, '2048']);
  if (ca) {
    const csr = join(dir, `${tag}.csr`);
    openssl(['req', '-new', '-key', key, '-subj', subject, '-out', csr]);
    openssl([
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      ca.crt,
      '-CAkey',
      ca.key,
      '-CAcreateserial',
      '-days',
      '1',
      '-out',
      crt,
    ]);
  } else {
    openssl(['req', '-x509', '-new', '-key', key, '-subj', subject, '-days', '1', '-out', crt]);
  }
  return { key, crt };
}

/** A kubeconfig with inline data; `cluster` and `user` are YAML flow maps' inner text. */
function kubeconfig(path: string, cluster: string, user: string): string {
  writeFileSync(
    path,
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: c, cluster: {server: "${controlPlane().apiUrl}", ${cluster}}}]`,
      `users: [{name: u, user: {${user}}}]`,
      'contexts: [{name: x, context: {cluster: c, user: u}}]',
      'current-context: x',
      '',
    ].join('\n'),
  );
  return path;
}

const b64 = (file: string): string => readFileSync(file).toString('base64');

void describe('the executable runtime', () => {
  let s: Suite;
  before(() => (s = setupSuite()));
  after(async () => {
    await s?.teardown();
  });
  const add = (id: string, conf: string) => s.run(env('ADD', id), conf);
  const del = (id: string, conf: string) => s.run(env('DEL', id), conf);

  void it('is Bun (the build default), standalone, the version package.json pins', () => {
    // BUN_BE_BUN=1 makes a Bun-compiled executable act as the bun CLI (bun.sh/docs/bundler/executables).
    const r = spawnSync(pluginPath, ['--version'], {
      env: { BUN_BE_BUN: '1', PATH: '/nonexistent' },
      encoding: 'utf8',
    });
    const pinned = (
      JSON.parse(readFileSync(join(repoRoot, 'node_modules', 'bun', 'package.json'), 'utf8')) as {
        version: string;
      }
    ).version;
    assert.equal(r.stdout.trim(), pinned);
  });

  void it('ignores a .env and bunfig.toml in the working directory the runtime gives it', () => {
    // Bun executables load both from the cwd unless built with --no-compile-autoload-*; a .env
    // there could set CNI_COMMAND, NODE_TLS_REJECT_UNAUTHORIZED and the like.
    const dir = join(s.tmp, 'cwd-with-dotenv');
    mkdirSync(dir);
    writeFileSync(join(dir, '.env'), 'CNI_COMMAND=VERSION\n');
    writeFileSync(join(dir, 'bunfig.toml'), 'preload = ["./nope.ts"]\n');
    const r = spawnSync(pluginPath, [], {
      cwd: dir,
      env: { PATH: '/nonexistent' },
      input: '{"cniVersion":"1.0.0"}',
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, '', 'no CNI_COMMAND in the environment: no VERSION document');
    assert.match(r.stderr, /CNI blockipam plugin/);
  });

  void it('a result larger than a pipe buffer reaches a slow reader whole (1,024 routes, ~100 KB)', async () => {
    const routes = Array.from({ length: 1024 }, (_, i) => ({
      dst: `10.${Math.floor(i / 256)}.${i % 256}.0/24`,
      mtu: 1400,
      advmss: 1360,
      priority: 100,
      table: 100,
      scope: 0,
    }));
    const conf = s.conf('1.1.0', { routes });
    const confFile = join(s.tmp, 'big-netconf.json');
    writeFileSync(confFile, conf);
    // A reader that starts 300 ms late, as the tester's `plugin | (sleep 0.1; cat)`: the plugin
    // must not exit with the result half in the pipe.
    const r = spawnSync(
      'bash',
      ['-c', 'set -o pipefail; "$0" < "$1" | (sleep 0.3; cat)', pluginPath, confFile],
      {
        env: { PATH: process.env.PATH, ...env('ADD', 'rt-big') },
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    assert.equal(r.status, 0, r.stderr);
    assert.ok(r.stdout.length > 65_536, `result is ${r.stdout.length} bytes`);
    const doc = JSON.parse(r.stdout) as { routes: unknown[] };
    assert.equal(doc.routes.length, 1024);
    assertSilentSuccess(await del('rt-big', conf));
  });

  void it('an endless stdin (/dev/zero) ends with code 6 after the 64 MiB bound, nothing allocated', () => {
    const zero = openSync('/dev/zero', 'r');
    try {
      const r = spawnSync(pluginPath, [], {
        env: { PATH: process.env.PATH, ...env('ADD', 'rt-zero') },
        stdio: [zero, 'pipe', 'pipe'],
        encoding: 'utf8',
        timeout: 60_000,
      });
      assert.equal(r.status, 1, r.stderr);
      const doc = JSON.parse(r.stdout) as { code: number; msg: string };
      assert.equal(doc.code, 6);
      assert.match(doc.msg, /too large/);
    } finally {
      closeSync(zero);
    }
  });

  void it('client certificate signed by the cluster CA: ADD and DEL succeed', async () => {
    const cp = controlPlane();
    const { key, crt } = clientCert(s.tmp, 'admin', '/O=system:masters/CN=blockipam-cert-admin', {
      crt: cp.caFile,
      key: join(cp.runDir, 'pki', 'ca.key'),
    });
    const path = kubeconfig(
      join(s.tmp, 'cert.kubeconfig'),
      `certificate-authority-data: ${b64(cp.caFile)}`,
      `client-certificate-data: ${b64(crt)}, client-key-data: ${b64(key)}`,
    );
    const conf = s.conf('1.0.0', { kubeconfig: path });
    assertAdded(await add('rt-cert', conf));
    assertSilentSuccess(await del('rt-cert', conf));
  });

  void it('client certificate from an unknown CA: 105, nothing allocated', async () => {
    const cp = controlPlane();
    const { key, crt } = clientCert(s.tmp, 'stranger', '/O=system:masters/CN=stranger');
    const path = kubeconfig(
      join(s.tmp, 'stranger.kubeconfig'),
      `certificate-authority-data: ${b64(cp.caFile)}`,
      `client-certificate-data: ${b64(crt)}, client-key-data: ${b64(key)}`,
    );
    const doc = assertCniError(await add('rt-stranger', s.conf('1.0.0', { kubeconfig: path })), 105);
    assert.match(String(doc.details), /401/);
    assert.equal(
      s.fx
        .blocks()
        .flatMap((b) => Object.values(b.spec.allocations))
        .some((a) => a.handle.includes('rt-stranger')),
      false,
    );
  });

  void it('a CA that did not sign the server certificate: 105 naming TLS', async () => {
    const other = clientCert(s.tmp, 'other-ca', '/CN=other-ca');
    const path = kubeconfig(
      join(s.tmp, 'other-ca.kubeconfig'),
      `certificate-authority-data: ${b64(other.crt)}`,
      `token: "${controlPlane().adminToken}"`,
    );
    const doc = assertCniError(await add('rt-other-ca', s.conf('1.0.0', { kubeconfig: path })), 105);
    assert.match(String(doc.details), /TLS|certificate/);
  });

  void it('insecure-skip-tls-verify without a CA: ADD and DEL succeed', async () => {
    const path = kubeconfig(
      join(s.tmp, 'insecure.kubeconfig'),
      'insecure-skip-tls-verify: true',
      `token: "${controlPlane().adminToken}"`,
    );
    const conf = s.conf('1.0.0', { kubeconfig: path });
    assertAdded(await add('rt-insecure', conf));
    assertSilentSuccess(await del('rt-insecure', conf));
  });

  void it('a proxy in the environment (HTTPS_PROXY to a dead port) is not used for a loopback API server, as client-go', async () => {
    const conf = s.conf('1.0.0');
    const proxied = { HTTPS_PROXY: 'http://127.0.0.1:9', https_proxy: 'http://127.0.0.1:9' };
    assertAdded(await s.run(env('ADD', 'rt-proxy', proxied), conf));
    assertSilentSuccess(await s.run(env('DEL', 'rt-proxy', proxied), conf));
  });

  void it('unusable TLS material in the kubeconfig: 11 "kubeconfig unavailable" naming the item (not PEM, DER, key not a key, key of another certificate)', async () => {
    const cp = controlPlane();
    const mine = clientCert(s.tmp, 'mine', '/O=system:masters/CN=mine', {
      crt: cp.caFile,
      key: join(cp.runDir, 'pki', 'ca.key'),
    });
    const other = clientCert(s.tmp, 'other-key', '/CN=other');
    openssl(['x509', '-in', cp.caFile, '-outform', 'DER', '-out', join(s.tmp, 'ca.der')]);
    const ca = `certificate-authority-data: ${b64(cp.caFile)}`;
    const garbage = Buffer.from('not a PEM at all').toString('base64');
    const cases: [string, string, string, RegExp][] = [
      [
        'bad-ca',
        `certificate-authority-data: ${garbage}`,
        `token: "${cp.adminToken}"`,
        /certificate-authority data/,
      ],
      [
        'der-ca',
        `certificate-authority-data: ${b64(join(s.tmp, 'ca.der'))}`,
        `token: "${cp.adminToken}"`,
        /not PEM/,
      ],
      [
        'bad-key',
        ca,
        `client-certificate-data: ${b64(mine.crt)}, client-key-data: ${garbage}`,
        /client-key data/,
      ],
      [
        'mismatch',
        ca,
        `client-certificate-data: ${b64(mine.crt)}, client-key-data: ${b64(other.key)}`,
        /does not belong/,
      ],
      ['cert-no-key', ca, `client-certificate-data: ${b64(mine.crt)}`, /without client-key/],
    ];
    for (const [tag, cluster, user, names] of cases) {
      const path = kubeconfig(join(s.tmp, `${tag}.kubeconfig`), cluster, user);
      const doc = assertCniError(await add(`rt-${tag}`, s.conf('1.0.0', { kubeconfig: path })), 11);
      assert.match(String(doc.details), names, tag);
      assert.doesNotMatch(String(doc.details), /typo/, tag);
    }
  });

  void it('client certificate files rotated in place are used by the next call', async () => {
    const cp = controlPlane();
    const signer = { crt: cp.caFile, key: join(cp.runDir, 'pki', 'ca.key') };
    const admin = clientCert(s.tmp, 'rot-admin', '/O=system:masters/CN=rot-admin', signer);
    const nobody = clientCert(s.tmp, 'rot-nobody', '/CN=rot-nobody', signer);
    const dir = join(s.tmp, 'rot');
    mkdirSync(dir);
    const crt = join(dir, 'c.crt');
    const key = join(dir, 'c.key');
    copyFileSync(admin.crt, crt);
    copyFileSync(admin.key, key);
    const path = kubeconfig(
      join(s.tmp, 'rot.kubeconfig'),
      `certificate-authority: ${cp.caFile}`,
      `client-certificate: ${crt}, client-key: ${key}`,
    );
    const conf = s.conf('1.0.0', { kubeconfig: path });
    assertAdded(await add('rt-rot1', conf));
    copyFileSync(nobody.crt, crt);
    copyFileSync(nobody.key, key);
    const denied = assertCniError(await add('rt-rot2', conf), 105);
    assert.match(String(denied.details), /403|rot-nobody/);
    rmSync(crt);
    const gone = assertCniError(await add('rt-rot3', conf), 11);
    assert.match(String(gone.details), /client-certificate/);
    copyFileSync(admin.crt, crt);
    copyFileSync(admin.key, key);
    assertSilentSuccess(await del('rt-rot1', conf));
  });

  void it('an empty tokenFile: 11 naming tokenFile (not an anonymous request)', async () => {
    const token = join(s.tmp, 'empty-token');
    writeFileSync(token, '\n');
    const path = kubeconfig(
      join(s.tmp, 'empty-token.kubeconfig'),
      `certificate-authority-data: ${b64(controlPlane().caFile)}`,
      `tokenFile: ${token}`,
    );
    const doc = assertCniError(await add('rt-empty-token', s.conf('1.0.0', { kubeconfig: path })), 11);
    assert.match(String(doc.details), /tokenFile.*empty/);
  });

  void it('a result that cannot be delivered (stdout is /dev/full) is exit 1, not success', () => {
    const confFile = join(s.tmp, 'full-netconf.json');
    writeFileSync(confFile, s.conf('1.0.0'));
    const r = spawnSync('bash', ['-c', '"$0" < "$1" > /dev/full', pluginPath, confFile], {
      env: { PATH: process.env.PATH, ...env('ADD', 'rt-full') },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(r.status, 1, r.stderr);
    assert.doesNotMatch(r.stderr, /writeSync|at .*\(/, 'no uncaught-exception dump');
    // The runtime calls DEL after a failed ADD; it releases what the ADD allocated.
    const d = spawnSync(pluginPath, [], {
      env: { PATH: process.env.PATH, ...env('DEL', 'rt-full') },
      input: s.conf('1.0.0'),
      encoding: 'utf8',
    });
    assert.equal(d.status, 0, d.stdout);
  });

  void it('BUN_CONFIG_VERBOSE_FETCH=curl in the environment prints no request (and no bearer token)', async () => {
    const conf = s.conf('1.0.0');
    const r = await s.run(env('ADD', 'rt-verbose', { BUN_CONFIG_VERBOSE_FETCH: 'curl' }), conf);
    assertAdded(r);
    assert.doesNotMatch(r.stderr, new RegExp(controlPlane().adminToken));
    assert.doesNotMatch(r.stderr, /curl --http1\.1/);
    assertSilentSuccess(await s.run(env('DEL', 'rt-verbose', { BUN_CONFIG_VERBOSE_FETCH: 'curl' }), conf));
  });

  void it('an IPv4-mapped loopback server ([::ffff:127.0.0.1]) is not proxied either', async () => {
    const port = new URL(controlPlane().apiUrl).port;
    const path = join(s.tmp, 'mapped.kubeconfig');
    writeFileSync(
      path,
      [
        'apiVersion: v1',
        'kind: Config',
        `clusters: [{name: c, cluster: {server: "https://[::ffff:127.0.0.1]:${port}", insecure-skip-tls-verify: true}}]`,
        `users: [{name: u, user: {token: "${controlPlane().adminToken}"}}]`,
        'contexts: [{name: x, context: {cluster: c, user: u}}]',
        'current-context: x',
        '',
      ].join('\n'),
    );
    const conf = s.conf('1.0.0', { kubeconfig: path });
    const proxied = { HTTPS_PROXY: 'http://127.0.0.1:9', ALL_PROXY: 'http://127.0.0.1:9' };
    assertAdded(await s.run(env('ADD', 'rt-mapped', proxied), conf));
    assertSilentSuccess(await s.run(env('DEL', 'rt-mapped', proxied), conf));
  });

  void it('host lock held by another process: ADD waits lockTimeoutMs then 11; a waiting ADD goes on when the holder is SIGKILLed', async () => {
    const lockFile = join(s.tmp, 'cache', 'ipam.lock');
    const c = await holdLock(lockFile);
    const conf = s.conf('1.0.0', { lockTimeoutMs: 300 });
    const busy = assertCniError(await add('rt-lock', conf), 11);
    assert.match(String(busy.msg), /lock/);
    const logFile = join(s.tmp, 'rt-lock.log');
    const patient = s.conf('1.0.0', { lockTimeoutMs: 30_000, logFile });
    const waiting = add('rt-lock', patient);
    await logged(logFile, /^host lock held by another process: waiting$/); // it tries every 10 ms
    await c.kill();
    assertAdded(await waiting);
    assertSilentSuccess(await del('rt-lock', patient));
  });

  void it('host lock held by another process: DEL waits lockTimeoutMs, then releases without the lock', async () => {
    assertAdded(await add('rt-lockbusy', s.conf('1.0.0')));
    const lockFile = join(s.tmp, 'cache', 'ipam.lock');
    const c = await holdLock(lockFile);
    try {
      const conf = s.conf('1.0.0', { lockTimeoutMs: 300 });
      assertSilentSuccess(await del('rt-lockbusy', conf));
      assert.equal(
        s.fx.allocations().has('confnet.rt-lockbusy.eth0'),
        false,
        'released while the lock was held',
      );
      assertSilentSuccess(await del('rt-lockbusy', conf)); // and again: nothing to release
    } finally {
      await c.kill();
    }
  });

  void it('a lock file that cannot be created: ADD fails with 5 naming ipam.lockFile, nothing allocated', async () => {
    const count = (): number => [...s.fx.allocations().values()].flat().length;
    const before = count();
    const conf = s.conf('1.0.0', { lockFile: '/proc/blockipam-no-such-dir/ipam.lock' });
    const r = assertCniError(await add('rt-lockfile', conf), 5);
    assert.match(String(r.msg), /ipam\.lockFile/);
    assert.match(String(r.details), /\/proc\/blockipam-no-such-dir\/ipam\.lock/);
    assert.equal(count(), before);
  });

  void it('DEL with a lock file that cannot be created: released without the lock (a DEL never fails on it)', async () => {
    assertAdded(await add('rt-lockdel', s.conf('1.0.0')));
    const conf = s.conf('1.0.0', { lockFile: '/proc/blockipam-no-such-dir/ipam.lock' });
    assertSilentSuccess(await del('rt-lockdel', conf));
    assert.equal(s.fx.allocations().has(`confnet.rt-lockdel.eth0`), false, 'released');
  });
});
