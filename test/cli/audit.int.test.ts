// The audit's snapshot against churn (real API server): an allocation released and its pod
// deleted between the block LIST and the pod LIST must not be reported as leaked. The seam
// `afterBlockList` runs exactly there, so the race is reproduced deterministically.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { autoAssign, handleOf, releaseByHandle } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { runAudit } from '../../cli/audit/audit.ts';
import { createPod, deletePod, poolObject, uniqueNamespace, cleanClusterHooks } from './cluster.ts';

const ns = uniqueNamespace('ipamctl-audit');
let ds: KubeDatastore;

/** Allocates through core for a new pod `name` on n1; returns the handle. */
async function allocate(name: string): Promise<string> {
  const pod = await createPod(ds, { namespace: ns, name, node: 'n1' });
  const handle = handleOf('k8s-pod-network', `c-${name}`, 'eth0');
  const got = await autoAssign(ds, {
    handle,
    node: 'n1',
    pod: { namespace: ns, name, uid: pod.metadata.uid ?? '' },
  });
  assert.ok(got.ok && got.ipv4, JSON.stringify(got));
  return handle;
}

describe('runAudit under churn (real API server)', () => {
  cleanClusterHooks({
    namespace: ns,
    nodes: ['n1'],
    onReady: (d) => (ds = d),
    setup: (d) => d.pools.create(poolObject('p4', '10.244.0.0/16')).then(() => undefined),
  });

  test('release then pod delete between the block LIST and the pod LIST: no false leak', async () => {
    const handle = await allocate('churn');
    const result = await runAudit(ds, {
      afterBlockList: async () => {
        await releaseByHandle(ds, handle);
        await deletePod(ds, ns, 'churn');
      },
    });
    assert.deepEqual(
      result.problems.filter((p) => p.severity === 'problem').map((p) => p.message),
      [],
    );
    assert.deepEqual(result.leaked, []);
  });

  test('a pod deleted (allocation kept) between the LISTs is still a leak', async () => {
    await allocate('kept');
    const result = await runAudit(ds, { afterBlockList: () => deletePod(ds, ns, 'kept') });
    assert.deepEqual(
      result.problems.map((p) => p.kind),
      ['leaked-pod-deleted'],
    );
    assert.equal(result.leaked.length, 1);
    assert.ok(result.snapshot.resourceVersions['ipamblocks (confirmation)']);
  });
});
