// The controller on the real API server with a podCIDR pool: each Node's spec.podCIDR becomes its
// block — created with core's labels and trusted by the next pass's classification — once; and
// an oversized managedFields another writer planted on a block is reset by the next pass.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeDatastore } from 'blockipam/core/kube';
import { kubeEventSink } from '../../block-controller/controller/events.ts';
import { Reconciler } from '../../block-controller/controller/reconciler.ts';
import { growManagedFields, managedFieldsBytes } from '../helpers/managed-fields.ts';
import { cleanClusterHooks, listedView, memoryLog, poolObject, uniqueNamespace } from './helpers.ts';

const ns = uniqueNamespace('ctl-podcidr');
let ds: KubeDatastore;
cleanClusterHooks({ namespace: ns, nodes: ['ctl-n1', 'ctl-n2'], onReady: (d) => (ds = d) });

/** Sets a Node's spec.podCIDR(s), as kube-controller-manager does once. */
async function givePodCIDR(node: string, cidr: string): Promise<void> {
  await ds.transport.request('PATCH', `/api/v1/nodes/${node}`, {
    body: { spec: { podCIDR: cidr, podCIDRs: [cidr] } },
    contentType: 'application/merge-patch+json',
  });
}

const reconciler = async () =>
  new Reconciler({
    ds,
    blockStatus: (block, options) => ds.blocks.updateStatus(block, options),
    view: await listedView(ds),
    log: memoryLog(),
    events: kubeEventSink(ds.transport, { namespace: 'default', instance: ns }),
  });

describe('controller: podCIDR pools and oversized managedFields (real API server)', () => {
  test("each node's podCIDR becomes its trusted block, once", async () => {
    const pool = poolObject('ctl-podcidr', '10.74.0.0/16', 24);
    await ds.pools.create({ ...pool, spec: { ...pool.spec, podCIDRBlocks: true } });
    await givePodCIDR('ctl-n1', '10.74.1.0/24');
    await givePodCIDR('ctl-n2', '10.74.2.0/24');
    const first = await (await reconciler()).pass();
    assert.deepEqual(first.podCIDRBlocks?.created, ['10-74-1-0-24', '10-74-2-0-24']);
    const block = await ds.blocks.get('10-74-1-0-24');
    assert.equal(block?.spec.affinity, 'ctl-n1');
    const labels = block?.metadata.labels ?? {};
    assert.deepEqual(
      [
        labels['ipam.blockipam.io/pool'],
        labels['ipam.blockipam.io/ip-family'],
        labels['ipam.blockipam.io/region'],
      ],
      ['ctl-podcidr', '4', '10-74-0-0-16'],
    );
    assert.deepEqual(
      Object.entries(labels)
        .filter(([k]) => k.startsWith('node.ipam.blockipam.io/'))
        .map(([, v]) => v),
      ['affine'],
    );
    const second = await (await reconciler()).pass();
    assert.deepEqual(second.podCIDRBlocks?.created, []);
    assert.deepEqual(second.trust?.ignored, [], 'core trusts the blocks the controller created');
  });

  test('a managedFields record another writer grew to ~40 KB is reset by the next pass', async () => {
    const pool = poolObject('ctl-podcidr', '10.74.0.0/16', 24);
    await ds.pools.create({ ...pool, spec: { ...pool.spec, podCIDRBlocks: true } });
    await givePodCIDR('ctl-n1', '10.74.1.0/24');
    await (await reconciler()).pass();
    const grown = await growManagedFields(ds, '10-74-1-0-24');
    const size = managedFieldsBytes;
    assert.ok(size(grown) > 40_000, `planted ${size(grown)} bytes`);
    const pass = await (await reconciler()).pass();
    assert.deepEqual(pass.managedFields, ['10-74-1-0-24']);
    const after = await ds.blocks.get('10-74-1-0-24');
    assert.ok(size(after) < 2_000, `after the pass: ${size(after)} bytes`);
    assert.equal(after?.spec.affinity, 'ctl-n1', 'nothing else changed');
  });
});
