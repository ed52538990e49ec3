// The controller's Trusted condition on the real API server (issue 23, D1): a block created
// inside another node's block is flagged Trusted=False through the IPAMBlock status
// subresource, with one Warning Event; a second pass writes nothing; the allocator's UPDATE of
// the block keeps the condition; and kubectl shows it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import type { KubeDatastore } from 'blockipam/core/kube';
import { kubeEventSink } from '../../block-controller/controller/events.ts';
import { controllerMetrics } from '../../block-controller/controller/metrics.ts';
import { Reconciler } from '../../block-controller/controller/reconciler.ts';
import { kubectl } from '../helpers/control-plane.ts';
import {
  blockObject,
  cleanClusterHooks,
  listedView,
  memoryLog,
  poolObject,
  uniqueNamespace,
} from './helpers.ts';

const ns = uniqueNamespace('ctl-trust');
let ds: KubeDatastore;
cleanClusterHooks({ namespace: ns, nodes: ['ctl-n1', 'ctl-n2'], onReady: (d) => (ds = d) });

async function events(name: string): Promise<{ type: string; reason: string; note: string }[]> {
  const list = await ds.transport.request<{
    items: {
      type: string;
      reason: string;
      note: string;
      regarding: { name: string };
      reportingInstance: string;
    }[];
  }>('GET', '/apis/events.k8s.io/v1/namespaces/default/events');
  return list.items.filter((e) => e.regarding.name === name && e.reportingInstance === ns);
}

describe('controller: IPAMBlock Trusted condition', () => {
  test("a /28 inside another node's /26 is flagged once, and the flag survives block UPDATEs", async () => {
    await ds.pools.create(poolObject('ctl-trust', '10.73.0.0/16'));
    // ctl-n2's block holding its pod, and ctl-n1's unowned /28 inside it claiming the address
    await ds.blocks.create(
      blockObject({
        cidr: '10.73.0.192/26',
        pool: 'ctl-trust',
        affinity: 'ctl-n2',
        allocations: [{ ordinal: 6, handle: 'net.v.eth0', node: 'ctl-n2' }],
      }),
    );
    await ds.blocks.create(
      blockObject({
        cidr: '10.73.0.192/28',
        pool: 'ctl-trust',
        affinity: null,
        allocations: [{ ordinal: 6, handle: 'net.h.eth0', node: 'ctl-n1' }],
      }),
    );
    const registry = new Registry();
    const r = new Reconciler({
      ds,
      blockStatus: (block, options) => ds.blocks.updateStatus(block, options),
      view: await listedView(ds),
      log: memoryLog(),
      metrics: controllerMetrics(registry),
      events: kubeEventSink(ds.transport, { namespace: 'default', instance: ns }),
    });
    const first = await r.pass();
    assert.deepEqual(first.trust?.written, ['10-73-0-192-28']);
    const hostile = await ds.blocks.get('10-73-0-192-28');
    const condition = hostile?.status?.conditions?.find((c) => c.type === 'Trusted');
    assert.deepEqual([condition?.status, condition?.reason], ['False', 'SizeMismatch']);
    assert.equal(condition?.observedGeneration, hostile?.metadata.generation);
    assert.equal((await ds.blocks.get('10-73-0-192-26'))?.status, undefined, 'the victim is not written');
    assert.deepEqual(
      (await events('10-73-0-192-28')).map((e) => [e.type, e.reason]),
      [['Warning', 'BlockIgnoredSizeMismatch']],
    );
    assert.match(
      await registry.getSingleMetricAsString('blockipam_ipam_blocks_ignored'),
      /blockipam_ipam_blocks_ignored\{reason="size-mismatch"\} 1/,
    );

    // the author's own compare-and-swap UPDATE (without status) cannot clear the flag
    const { status: _status, ...plain } = hostile!;
    const updated = await ds.blocks.update({
      ...plain,
      spec: { ...plain.spec, sequence: plain.spec.sequence + 1 },
    });
    assert.equal(updated.status?.conditions?.[0]?.reason, 'SizeMismatch');

    // nothing changed but the generation: nothing written, no second Event
    const again = await r.pass({ view: await listedView(ds) });
    assert.deepEqual(again.trust?.written, []);
    assert.equal((await events('10-73-0-192-28')).length, 1);

    const table = kubectl([
      'get',
      'ipamblock',
      '10-73-0-192-28',
      '-o',
      'jsonpath={.status.conditions[?(@.type=="Trusted")].reason}',
    ]);
    assert.equal(table.status, 0, table.stderr);
    assert.equal(table.stdout, 'SizeMismatch');
  });
});
