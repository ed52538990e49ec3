// The production backend's kubeconfig loading, in-process through the dispatcher: a kubeconfig
// whose current-context is unset is refused as kubectl refuses it (code 11 naming
// current-context), never "the first context" — nothing is sent to any server.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { createKubeBackend, shouldPreconnect } from '../../../ipam-plugin/backend/kube-backend.ts';
import { parseNetConf } from '../../../ipam-plugin/cni/netconf.ts';
import { dispatch } from '../../../ipam-plugin/dispatch.ts';
import { processLock } from '../helpers/host-lock.ts';

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
    let stdout = '';
    const stdin = JSON.stringify({
      cniVersion: '1.1.0',
      name: 'net',
      type: 'ptp',
      ipam: { type: 'blockipam', nodeName: 'n1', kubeconfig, cacheDir: join(tmp, 'cache') },
    });
    const code = await dispatch(
      {
        env: {
          CNI_COMMAND: 'ADD',
          CNI_CONTAINERID: 'c1',
          CNI_NETNS: '/var/run/netns/x',
          CNI_IFNAME: 'eth0',
          CNI_PATH: '/opt/cni/bin',
        },
        readStdin: () => stdin,
        stdout: { write: (s: string) => (stdout += s) },
        stderr: { write: () => undefined },
      },
      { backend: createKubeBackend, ...processLock },
    );
    assert.equal(code, 1);
    const doc = JSON.parse(stdout) as { code: number; msg: string; details: string };
    assert.equal(doc.code, 11, stdout);
    assert.equal(doc.msg, 'kubeconfig unavailable');
    assert.match(doc.details, /current-context is not set/);
    assert.match(doc.details, /two-contexts\.kubeconfig/);
  });
});

void describe('kube backend: connection opened ahead', () => {
  const conf = (lockQueue: boolean) =>
    parseNetConf(
      JSON.stringify({
        cniVersion: '1.1.0',
        name: 'n',
        ipam: { type: 'blockipam', nodeName: 'n1', cacheDir: join(tmp, 'pc'), lockQueue },
      }),
    );
  void it('never for STATUS (a warm one sends nothing); always for CHECK, GC and without lockQueue', async () => {
    assert.equal(await shouldPreconnect(conf(true), 'STATUS'), false);
    assert.equal(await shouldPreconnect(conf(false), 'STATUS'), false);
    assert.equal(await shouldPreconnect(conf(true), 'CHECK'), true);
    assert.equal(await shouldPreconnect(conf(true), 'GC'), true);
    assert.equal(await shouldPreconnect(conf(false), 'ADD'), true);
    assert.equal(await shouldPreconnect(conf(false), 'DEL'), true);
  });
  void it('for ADD and DEL with lockQueue, as the lock probe says (here under Node it cannot tell: true)', async () => {
    assert.equal(await shouldPreconnect(conf(true), 'ADD'), true);
    assert.equal(await shouldPreconnect(conf(true), 'DEL'), true);
  });
});
