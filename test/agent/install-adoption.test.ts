// The installer while a node is adopted from host-local (install/installer.ts, conflist
// `hostLocalStore`): the conflist waits for the node's opt-in, is written with the store once the
// node is opted in, and removed again when it no longer is (the runtime goes back to host-local's).
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { CniInstaller } from '../../block-controller/agent/install/installer.ts';
import type { InstallOptions } from '../../block-controller/agent/install/installer.ts';
import { createAgentMetrics } from '../../block-controller/agent/metrics.ts';
import type { KubeTransport } from 'blockipam/core/kube';
import { quietLog as log } from './fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'bipam-install-adoption-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const STORE = '/run/cni-ipam-state/kindnet';

function installer(hostLocalStore?: string): CniInstaller {
  const options: InstallOptions = {
    cniBinDir: dir,
    cniConfDir: dir,
    conflistName: '10-blockipam.conflist',
    conflist: { ...(hostLocalStore ? { hostLocalStore } : {}) },
    kubeconfigPath: join(dir, 'blockipam-kubeconfig'),
    pluginServer: 'https://127.0.0.1:6443',
    token: { namespace: 'ns', serviceAccount: 'sa', audiences: [], expirationSeconds: 3600, node: 'n1' },
  };
  // no token is requested on this path: adoption() writes the conflist alone
  const transport = {} as KubeTransport;
  return new CniInstaller(options, { transport, log, metrics: createAgentMetrics(), node: 'n1' });
}

const conflist = join(dir, '10-blockipam.conflist');

test('the conflist follows the opt-in: written with the store, removed when taken back', async () => {
  const i = installer(STORE);
  await i.adoption(false);
  assert.ok(!existsSync(conflist), 'not opted in: no conflist');
  await i.adoption(true);
  const written = JSON.parse(readFileSync(conflist, 'utf8')) as {
    plugins: { ipam: Record<string, unknown> }[];
  };
  assert.equal(written.plugins[0]?.ipam.hostLocalStore, STORE);
  await i.adoption(true);
  assert.ok(existsSync(conflist));
  await i.adoption(false);
  assert.ok(!existsSync(conflist), 'rolled back: the runtime goes back to host-local’s conflist');
});

test('a conflist written outside adoption mode is kept on a node not opted in (blockipam served it before)', async () => {
  const before = JSON.stringify({
    cniVersion: '1.1.0',
    name: 'blockipam',
    plugins: [{ type: 'ptp', ipam: { type: 'blockipam', kubeconfig: '/k' } }],
  });
  writeFileSync(conflist, before);
  await installer(STORE).adoption(false);
  assert.equal(readFileSync(conflist, 'utf8'), before, 'kept as it was');
  writeFileSync(
    conflist,
    JSON.stringify({ plugins: [{ type: 'ptp', ipam: { type: 'blockipam', hostLocalStore: STORE } }] }),
  );
  await installer(STORE).adoption(false);
  assert.ok(!existsSync(conflist), 'one written in adoption mode goes (a rollback after an agent restart)');
});

test('without a store the opt-in changes nothing', async () => {
  const i = installer();
  await i.adoption(true);
  assert.ok(!existsSync(conflist));
});
