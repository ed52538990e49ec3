// ipamctl's connection (cli/connect.ts): kubeconfig discovery like kubectl, and an unreachable
// API server (exit 2, a clear message, no verdict); the executable (cli/main.ts) sets the process
// exit code from the dispatcher's. Usage errors, --help and refused input: client-validation.test.ts.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { controlPlane } from '../helpers/control-plane.ts';
import { cleanClusterHooks, ipamctl } from './cluster.ts';

const dir = mkdtempSync(join(tmpdir(), 'ipamctl-cli-'));

/** Writes a kubeconfig of one cluster `c` and one user `u` (YAML flow lists), context `x` current. */
function writeKubeconfig(path: string, clusters: string, users: string): void {
  const lines = ['apiVersion: v1', 'kind: Config', `clusters: ${clusters}`, `users: ${users}`];
  lines.push('contexts: [{name: x, context: {cluster: c, user: u}}]', 'current-context: x', '');
  writeFileSync(path, lines.join('\n'));
}

describe('ipamctl connect: discovery and an unreachable API server (real API server)', () => {
  cleanClusterHooks({ nodes: [], onReady: () => undefined }); // a clean cluster before and after

  test('unreachable API server: exit 2 with a clear message, no verdict', async () => {
    const kubeconfig = join(dir, 'unreachable.kubeconfig');
    // Port 1 on loopback: nothing listens there, the connection is refused at once.
    writeKubeconfig(
      kubeconfig,
      '[{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]',
      '[{name: u, user: {token: t}}]',
    );
    const out = await ipamctl(['check', '--kubeconfig', kubeconfig]);
    assert.equal(out.code, 2);
    assert.match(
      out.stderr,
      /ipamctl check: could not check\nipamctl: cannot reach the Kubernetes API server \(.*ECONNREFUSED.*\); nothing was changed/,
    );
    assert.doesNotMatch(out.stdout, /Check complete/);
  });

  test('a server that is not a URL: exit 2 naming the cluster and the server, no request', async () => {
    const kubeconfig = join(dir, 'not-a-url.kubeconfig');
    writeKubeconfig(
      kubeconfig,
      '[{name: c, cluster: {server: "not a url"}}]',
      '[{name: u, user: {token: t}}]',
    );
    const out = await ipamctl(['check', '--kubeconfig', kubeconfig]);
    assert.equal(out.code, 2);
    assert.match(out.stderr, /cluster c server is not an https:\/\/ or http:\/\/ URL: "not a url"/);
    assert.doesNotMatch(out.stderr, /TypeError/);
  });

  test('an exec credential plugin that fails: exit 2, the message says so (not an empty reason)', async () => {
    const kubeconfig = join(dir, 'exec-false.kubeconfig');
    writeKubeconfig(
      kubeconfig,
      '[{name: c, cluster: {server: "https://127.0.0.1:1"}}]',
      '[{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/false, interactiveMode: Never}}}]',
    );
    const out = await ipamctl(['check', '--kubeconfig', kubeconfig]);
    assert.equal(out.code, 2);
    assert.match(out.stderr, /cannot get credentials: \S.*exec credential plugin that failed/);
  });

  // Each row: arguments, the message expected on stderr.

  test('kubeconfig discovery: KUBECONFIG (path list, first wins, missing skipped), then ~/.kube/config; none → exit 2', async () => {
    const { adminKubeconfig: admin, devKubeconfig: dev } = controlPlane();
    // Both files define cluster "local": kubectl keeps the first; the admin context must win.
    const viaEnv = await ipamctl(['check'], {
      env: { KUBECONFIG: `${join(dir, 'missing')}:${admin}:${dev}` },
    });
    assert.equal(viaEnv.code, 0, viaEnv.stderr);
    // The dev identity has no RBAC roles: picking its file first gives a refusal, exit 2.
    const devFirst = await ipamctl(['check'], { env: { KUBECONFIG: `${dev}:${admin}` } });
    assert.equal(devFirst.code, 2);
    assert.match(devFirst.stderr, /the API server refused the request: .*forbidden/);
    const home = join(dir, 'home');
    mkdirSync(join(home, '.kube'), { recursive: true });
    copyFileSync(admin, join(home, '.kube', 'config'));
    const viaHome = await ipamctl(['check'], { env: { HOME: home } });
    assert.equal(viaHome.code, 0, viaHome.stderr);
    // --context picks an existing context; an unknown one is a clear exit 2 (bad-usage table).
    const named = await ipamctl(['check', '--kubeconfig', admin, '--context', 'admin']);
    assert.equal(named.code, 0, named.stderr);
    const none = await ipamctl(['check'], { env: { HOME: join(dir, 'nowhere') } });
    assert.equal(none.code, 2);
    assert.match(
      none.stderr,
      /no kubeconfig found: pass --kubeconfig FILE, set KUBECONFIG, or create ~\/\.kube\/config/,
    );
  });

  test('the executable: node cli/main.ts check sets the process exit code', () => {
    const main = fileURLToPath(new URL('../../cli/main.ts', import.meta.url));
    const ok = spawnSync(process.execPath, [main, 'check', '--kubeconfig', controlPlane().adminKubeconfig], {
      encoding: 'utf8',
    });
    assert.equal(ok.status, 0, ok.stderr);
    assert.match(ok.stdout, /Check complete: no problems found\./);
    assert.equal(spawnSync(process.execPath, [main, 'check', '--nope'], { encoding: 'utf8' }).status, 2);
  });
});
