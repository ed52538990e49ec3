// The Datastore contract suite against the real kube-apiserver (same cases as the memory store).
import { controlPlane } from '../helpers/control-plane.ts';
import { adminDatastore, wipeBlockipam } from '../helpers/crds.ts';
import { datastoreContract } from '../core/datastore-contract.ts';
import type { ContractWorld } from '../core/datastore-contract.ts';
import { isExpired, mustParseCidr, newBlock, type IPAMBlock } from 'blockipam/core';
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

/**
 * An IPAMBlock of the compaction probe: the same kind as the contract's paged tokens, because
 * each kind's watch cache learns of a compaction on its own (a probe of another kind could be
 * Expired while an IPAMBlock token is still served: seen in a loaded CI run).
 */
function probeBlock(cidr: string): IPAMBlock {
  const b = newBlock({ cidr: mustParseCidr(cidr), pool: 'contract-probe', node: 'probe-node', nowMs: 0 });
  b.metadata.labels = { ...b.metadata.labels, ...PROBE };
  return b;
}
const PROBE_CIDRS = ['10.212.0.0/26', '10.212.0.64/26'];

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
 * a probe token (a first page of two IPAMBlocks, removed afterwards) is Expired — each round changes the probe
 * and compacts again, ≤ 30 rounds of 1 s (the compactor re-reads `compact_rev_key` every second
 * when its watch of it broke; seen here: Expired after 1 to 3 rounds).
 */
async function compactEtcd(ds: KubeDatastore): Promise<void> {
  const selector = { matchLabels: PROBE };
  for (const cidr of PROBE_CIDRS) {
    const b = probeBlock(cidr);
    if (!(await ds.blocks.get(b.metadata.name))) await ds.blocks.create(b);
  }
  const probe = await ds.blocks.listPage({ limit: 1, labelSelector: selector });
  try {
    for (let round = 0; round < 30; round++) {
      const name = probeBlock(PROBE_CIDRS[0]!).metadata.name;
      const a = await ds.blocks.get(name);
      if (a)
        await ds.blocks.update({
          ...a,
          metadata: { ...a.metadata, annotations: { ...a.metadata.annotations, round: String(round) } },
        });
      await compactOnce();
      for (let i = 0; i < 10; i++) {
        try {
          await ds.blocks.listPage({ limit: 1, labelSelector: selector, continue: probe.continue });
        } catch (error) {
          if (isExpired(error)) return;
          throw error;
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    throw new Error('the API server still serves a continue token from before 30 compactions');
  } finally {
    for (const cidr of PROBE_CIDRS)
      await ds.blocks.delete(probeBlock(cidr).metadata.name).catch(() => undefined);
  }
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
