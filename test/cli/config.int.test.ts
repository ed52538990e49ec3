// ipamctl config get / set against the real API server: values, defaults, the cross-field
// rules, a key given twice.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeDatastore } from 'blockipam/core/kube';
import { cleanClusterHooks, ipamctl, uniqueNamespace } from './cluster.ts';

const ns = uniqueNamespace('ipamctl-config');
let ds: KubeDatastore;

describe('ipamctl config (real API server)', () => {
  cleanClusterHooks({ namespace: ns, nodes: ['n1', 'n2'], onReady: (d) => (ds = d) });

  test('config set / get: values, defaults, and the cross-field rule', async () => {
    const set = await ipamctl(['config', 'set', 'strictAffinity=true', 'maxBlocksPerNode=4']);
    assert.equal(set.code, 0, set.stderr);
    const got = JSON.parse((await ipamctl(['config', 'get', '-o', 'json'])).stdout) as {
      effective: Record<string, unknown>;
    };
    assert.equal(got.effective.strictAffinity, true);
    assert.equal(got.effective.maxBlocksPerNode, 4);
    assert.equal(got.effective.leakGracePeriodSeconds, 900);
    assert.match((await ipamctl(['config', 'get'])).stdout, /maxBlocksPerNode +4 +set/);
    const refused = await ipamctl(['config', 'set', 'strictAffinity=false', 'autoAllocateBlocks=false']);
    assert.equal(refused.code, 2);
    assert.match(
      refused.stderr,
      /autoAllocateBlocks: false requires spec\.strictAffinity: true\. Nothing was changed\./,
    );
    assert.equal((await ds.configs.get('default'))?.spec.strictAffinity, true);
  });

  test('concurrent config set of different keys: each one lands (a lost race starts over)', async () => {
    const settings = [
      'maxBlocksPerNode=7',
      'ipCooldownSeconds=5',
      'leakGracePeriodSeconds=600',
      'minFreeAddressesPerNode=8',
    ];
    const runs = await Promise.all(settings.map((kv) => ipamctl(['config', 'set', kv])));
    for (const run of runs) assert.equal(run.code, 0, run.stderr);
    const spec = (await ds.configs.get('default'))?.spec;
    assert.deepEqual(
      [
        spec?.maxBlocksPerNode,
        spec?.ipCooldownSeconds,
        spec?.leakGracePeriodSeconds,
        spec?.minFreeAddressesPerNode,
      ],
      [7, 5, 600, 8],
    );
  });

  test('config set refuses a key given twice', async () => {
    const out = await ipamctl(['config', 'set', 'maxBlocksPerNode=4', 'maxBlocksPerNode=5']);
    assert.equal(out.code, 2);
    assert.match(out.stderr, /maxBlocksPerNode is given twice \(maxBlocksPerNode=4, maxBlocksPerNode=5\)/);
    assert.equal(await ds.configs.get('default'), undefined);
  });
});
