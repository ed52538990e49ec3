// The production backend's kubeconfig loading: a kubeconfig whose current-context is unset is
// refused as kubectl refuses it (code 11 naming current-context), never "the first context" —
// nothing is sent to any server; a JSON kubeconfig (what the node agent writes) is read with
// JSON.parse, a YAML one with the YAML loader.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { createKubeBackend, loadKubeconfigFile } from '../../../ipam-plugin/backend/kube-backend.ts';
import { baseEnv, invoke, netconf } from '../helpers/run-dispatch.ts';

const tmp = mkdtempSync(join(tmpdir(), 'bipam-kube-backend-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

void describe('kube backend: kubeconfig', () => {
  void it('refuses a kubeconfig without current-context: code 11 naming current-context', async () => {
    const kubeconfig = join(tmp, 'two-contexts.kubeconfig');
    writeFileSync(
      kubeconfig,
      `clusters:
- { name: a, cluster: { server: "https://127.0.0.1:1", insecure-skip-tls-verify: true } }
- { name: b, cluster: { server: "https://127.0.0.1:2", insecure-skip-tls-verify: true } }
users: [{ name: u, user: { token: t } }]
contexts:
- { name: first, context: { cluster: a, user: u } }
- { name: second, context: { cluster: b, user: u } }
`,
    );
    const { code, stdout } = await invoke(
      { CNI_COMMAND: 'ADD', ...baseEnv },
      netconf('1.1.0', { nodeName: 'n1', kubeconfig, cacheDir: join(tmp, 'cache') }),
      createKubeBackend,
    );
    assert.equal(code, 1);
    const doc = JSON.parse(stdout) as { code: number; msg: string; details: string };
    assert.equal(doc.code, 11, stdout);
    assert.equal(doc.msg, 'kubeconfig unavailable');
    assert.match(doc.details, /current-context is not set/);
    assert.match(doc.details, /two-contexts\.kubeconfig/);
  });
});

void describe('kube backend: kubeconfig JSON first', () => {
  const doc = {
    clusters: [
      { name: 'c', cluster: { server: 'https://127.0.0.1:6443/', 'insecure-skip-tls-verify': true } },
    ],
    users: [{ name: 'u', user: { token: 't0k' } }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'x',
  };
  const want = { server: 'https://127.0.0.1:6443', token: 't0k', insecureSkipTLSVerify: true };

  void it('JSON is read with JSON.parse: a duplicate key (last wins) that the YAML loader refuses', async () => {
    const path = join(tmp, 'agent.kubeconfig');
    // The YAML loader refuses duplicate map keys ("Map keys must be unique"); JSON.parse keeps the last.
    writeFileSync(path, JSON.stringify(doc).replace('{"clusters"', '{"current-context":"none","clusters"'));
    assert.deepEqual(await loadKubeconfigFile(path), want);
  });

  void it('YAML (not JSON) goes to the YAML loader', async () => {
    const path = join(tmp, 'user.kubeconfig');
    writeFileSync(
      path,
      `clusters: [{ name: c, cluster: { server: "https://127.0.0.1:6443/", insecure-skip-tls-verify: true } }]
users: [{ name: u, user: { token: t0k } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`,
    );
    assert.deepEqual(await loadKubeconfigFile(path), want);
  });

  void it('an unreadable file is a KubeconfigError naming it', async () => {
    await assert.rejects(loadKubeconfigFile(join(tmp, 'absent')), {
      name: 'KubeconfigError',
      message: /cannot read kubeconfig .*absent/,
    });
  });
});
