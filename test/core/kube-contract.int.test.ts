// The Datastore contract suite against the real kube-apiserver (same cases as the memory store).
import { controlPlane } from '../helpers/control-plane.ts';
import { adminDatastore, wipeBlockipam } from '../helpers/crds.ts';
import { datastoreContract } from '../core/datastore-contract.ts';
import type { ContractWorld } from '../core/datastore-contract.ts';
import { isExpired } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';

/** Creates the world's namespaces, nodes and pods (with their status: phase, IPs). */
async function create(ds: KubeDatastore, world: ContractWorld): Promise<void> {
  for (const ns of world.namespaces) await ds.transport.request('POST', '/api/v1/namespaces', { body: ns });
  for (const node of world.nodes) await ds.transport.request('POST', '/api/v1/nodes', { body: node });
  for (const pod of world.pods) {
    const path = `/api/v1/namespaces/${pod.metadata.namespace ?? ''}/pods`;
    const body = {
      ...pod,
      spec: { ...pod.spec, containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
    };
    const created = await ds.transport.request<typeof pod>('POST', path, { body });
    if (pod.status)
      await ds.transport.request('PUT', `${path}/${pod.metadata.name}/status`, {
        body: { ...created, status: pod.status },
      });
  }
}

/** etcd's JSON gateway (etcd v3 API over HTTP): a POST to `/v3/<path>`. */
async function etcd<T>(path: string, body: unknown): Promise<T> {
  const answer = await fetch(`${controlPlane().etcdUrl}/v3/${path}`, {
    method: 'POST',
    body: JSON.stringify(body),
  });
  if (!answer.ok) throw new Error(`etcd ${path}: HTTP ${answer.status}: ${await answer.text()}`);
  return (await answer.json()) as T;
}

const PROBE = { 'contract.test/probe': 'yes' };

/** An IPReservation of the compaction probe. */
const probeReservation = (name: string) => ({
  apiVersion: 'ipam.blockipam.io/v1alpha1',
  kind: 'IPReservation',
  metadata: { name, labels: PROBE },
  spec: { reservedCIDRs: ['10.212.0.0/32'] },
});

/** One compaction as the API server's compactor does it: `compact_rev_key`, then etcd's compaction. */
async function compactOnce(): Promise<void> {
  const key = Buffer.from('compact_rev_key').toString('base64');
  const range = await etcd<{ header: { revision: string } }>('kv/range', { key });
  const revision = String(Number(range.header.revision) + 1); // the put below makes this revision
  const put = await etcd<{ header: { revision: string } }>('kv/put', {
    key,
    value: Buffer.from(revision).toString('base64'),
  });
  await etcd('kv/compaction', { revision: put.header.revision, physical: true });
}

/**
 * What the API server's own compactor does every 5 min (k8s.io/apiserver storage/etcd3
 * compact.go), past every revision handed out so far: a write of `compact_rev_key` (whose watch
 * tells every API server's watch cache to drop its snapshots up to that revision — the cache
 * serves continue tokens too, KEP-4988), then a physical etcd compaction at that write's revision.
 * The watch cache learns of it asynchronously, and keeps a kind's newest snapshot: resolves once
 * a probe token (a first page of two IPReservations) is Expired — each round changes the probe
 * and compacts again, ≤ 30 rounds of 1 s (the compactor re-reads `compact_rev_key` every second
 * when its watch of it broke; seen here: Expired after 1 to 3 rounds).
 */
async function compactEtcd(ds: KubeDatastore): Promise<void> {
  const selector = { matchLabels: PROBE };
  for (const name of ['contract-probe-a', 'contract-probe-b'])
    if (!(await ds.reservations.get(name))) await ds.reservations.create(probeReservation(name));
  const probe = await ds.reservations.listPage({ limit: 1, labelSelector: selector });
  for (let round = 0; round < 30; round++) {
    const a = await ds.reservations.get('contract-probe-a');
    if (a)
      await ds.reservations.update({
        ...a,
        metadata: { ...a.metadata, labels: { ...PROBE, round: String(round) } },
      });
    await compactOnce();
    for (let i = 0; i < 10; i++) {
      try {
        await ds.reservations.listPage({ limit: 1, labelSelector: selector, continue: probe.continue });
      } catch (error) {
        if (isExpired(error)) return;
        throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  throw new Error('the API server still serves a continue token from before 30 compactions');
}

datastoreContract('Kubernetes API server', async (world) => {
  const ds = adminDatastore();
  await wipeBlockipam(ds);
  await create(ds, world);
  return {
    ds,
    compact: () => compactEtcd(ds),
    cleanup: async () => {
      await wipeBlockipam(ds);
      for (const node of world.nodes)
        await ds.transport.request('DELETE', `/api/v1/nodes/${node.metadata.name}`);
      for (const ns of world.namespaces)
        await ds.transport.request('DELETE', `/api/v1/namespaces/${ns.metadata.name}/pods`, {
          query: { gracePeriodSeconds: '0' },
        });
      ds.close();
    },
  };
});
