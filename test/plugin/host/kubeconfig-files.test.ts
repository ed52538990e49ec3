/**
 * The executable with a kubeconfig whose files are not (yet) there — the node agent often writes
 * them after the runtime starts calling: code 11 (try again later) naming the kubeconfig field,
 * not 999 with a raw ENOENT (docs/design-plugin.md, error table). Neither case reaches the API
 * server: the CA is read when the kubeconfig is loaded, the tokenFile before the first request.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { assertCniError, env } from '../helpers/conformance.ts';
import { ensurePlugin, runPlugin } from '../helpers/plugin-exe.ts';

const tmp = mkdtempSync(join(tmpdir(), 'bipam-kubeconfig-files-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

/** A kubeconfig file with `cluster` and `user` fields (flow-style YAML maps) and its netconf. */
function netconf(name: string, cluster: string, user: string): string {
  const kubeconfig = join(tmp, `${name}.kubeconfig`);
  writeFileSync(
    kubeconfig,
    `clusters: [{ name: c, cluster: { server: "https://127.0.0.1:1", ${cluster} } }]
users: [{ name: u, user: { ${user} } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`,
  );
  return JSON.stringify({
    cniVersion: '1.0.0',
    name: 'kcnet',
    type: 'ptp',
    ipam: {
      type: 'blockipam',
      kubeconfig,
      nodeName: 'kc-node',
      cacheDir: join(tmp, `${name}-cache`),
      ipv4Pools: ['kc-v4'],
    },
  });
}

void describe('kubeconfig files not (yet) readable', () => {
  ensurePlugin();
  // [case, cluster fields, user fields, field named in the details, path named]
  const cases: [string, string, string, string, string][] = [
    [
      'ca',
      'certificate-authority: /nonexistent/ca.crt',
      'token: t',
      'certificate-authority',
      '/nonexistent/ca.crt',
    ],
    [
      'token',
      'insecure-skip-tls-verify: true',
      'tokenFile: /nonexistent/token',
      'tokenFile',
      '/nonexistent/token',
    ],
  ];
  for (const [name, cluster, user, field, path] of cases)
    void it(`ADD with a missing ${field} → code 11 naming ${field}`, async () => {
      const e = assertCniError(await runPlugin(env('ADD', `kc-${name}`), netconf(name, cluster, user)), 11);
      assert.equal(e.msg, 'kubeconfig unavailable');
      assert.match(String(e.details), new RegExp(`${field} ${path}`));
    });
});
