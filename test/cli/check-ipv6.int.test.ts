// ipamctl check and show on IPv6 (real API server): canonical addresses in findings, IPv6
// pod IPs, and the capacity of a large pool as an exact number.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { KubeDatastore } from 'blockipam/core/kube';
import type { Report } from '../../cli/audit/report.ts';
import {
  adminDatastore,
  blockObject,
  cleanCluster,
  createNamespace,
  createNode,
  createPod,
  ipamctl,
  poolObject,
  uniqueNamespace,
} from './cluster.ts';

const dir = mkdtempSync(join(tmpdir(), 'ipamctl-v6-'));
const ns = uniqueNamespace('ipamctl-v6');
let ds: KubeDatastore;

describe('ipamctl on IPv6 (real API server)', () => {
  before(async () => {
    ds = adminDatastore();
    await cleanCluster(ds);
    await createNamespace(ds, ns);
    await createNode(ds, 'n1');
  });
  after(async () => {
    await cleanCluster(ds, [ns]);
    await ds.transport.request('DELETE', `/api/v1/namespaces/${ns}`);
    ds.close();
  });

  test('a leaked IPv6 allocation and an unallocated IPv6 pod IP are named in canonical form', async () => {
    await ds.pools.create(poolObject('p6', 'fd00:10:244::/64', 122));
    const live = { ordinal: 6, handle: 'net.live.eth0', node: 'n1', namespace: ns, pod: 'live', podUID: '' };
    const pod = await createPod(ds, { namespace: ns, name: 'live', node: 'n1', ip: 'fd00:10:244::6' });
    live.podUID = pod.metadata.uid ?? '';
    const gone = {
      ordinal: 5,
      handle: 'net.gone.eth0',
      node: 'n1',
      namespace: ns,
      pod: 'gone',
      podUID: 'u-gone',
    };
    await ds.blocks.create(
      blockObject({ cidr: 'fd00:10:244::/122', pool: 'p6', affinity: 'n1', allocations: [gone, live] }),
    );
    await createPod(ds, { namespace: ns, name: 'orphan', node: 'n1', ip: 'fd00:10:244::a9' });
    const path = join(dir, 'v6.json');
    const out = await ipamctl(['check', '-o', path]);
    assert.equal(out.code, 1, out.stderr);
    const report = JSON.parse(readFileSync(path, 'utf8')) as Report;
    assert.deepEqual(Object.keys(report.byKind).sort(), ['leaked-pod-deleted', 'pod-ip-unallocated']);
    assert.deepEqual(
      report.leaked.map((l) => [l.address, l.block]),
      [['fd00:10:244::5', 'fd00-10-244---122']],
    );
    assert.match(
      out.stdout,
      new RegExp(`pod ${ns}/orphan .* has IP fd00:10:244::a9, which no IPAMBlock allocates`),
    );
  });

  test('show: a /64 pool of /122 blocks has an exact capacity beyond 2^53 (a decimal string in JSON, as for IPv4)', async () => {
    const shown = JSON.parse((await ipamctl(['show', '-o', 'json'])).stdout) as {
      name: string;
      capacity: unknown;
      used: unknown;
    }[];
    // 2^58 blocks × (64 − 2 reserved) assignable addresses.
    assert.deepEqual(
      shown.map((p) => [p.name, p.capacity, p.used]),
      [['p6', ((1n << 58n) * 62n).toString(), '2']],
    );
  });
});
