/**
 * ipamctl tests' view of the real API server: CRDs installed once, a KubeDatastore as admin,
 * seeding helpers (nodes, pods with a status IP, whole IPAMBlock objects with chosen
 * allocations), in-process ipamctl runs, and cleanup of everything a test created (test files
 * share one cluster). Nodes carry the label `ipamctl-test=1`; namespaces are unique per file.
 */
import { randomBytes } from 'node:crypto';
import { after, before, beforeEach } from 'node:test';
import { API_VERSION, newBlock, parseCidr, allocateOrdinal } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import type { IPAMBlock, IPPool, Pod } from 'blockipam/core';
// Not in core's public index yet (reported to the lead): the pure allocation step, for seeding.
import { run } from '../../cli/ipamctl.ts';
import { controlPlane } from '../helpers/control-plane.ts';

export const TEST_LABEL = 'ipamctl-test';

import { adminDatastore, wipeBlockipam } from '../helpers/crds.ts';

export { adminDatastore };

/** A fresh namespace name (namespaces cannot be deleted to completion without a controller manager). */
export function uniqueNamespace(prefix = 'ipamctl'): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

/** Result of one in-process ipamctl run. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs ipamctl in-process as the admin (unless `options.env` / an explicit --kubeconfig says
 * otherwise). check's leak confirmation wait is `options.sleep` — by default none: the
 * confirmation LIST follows at once, as with `--confirm-after 0`; tests of the wait pass their own
 * (which runs the late DEL) or `realSleep`.
 */
export async function ipamctl(
  args: readonly string[],
  options: {
    env?: Record<string, string | undefined>;
    cwd?: string;
    sleep?: (ms: number) => Promise<void>;
  } = {},
): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const explicit = options.env !== undefined || args.includes('--kubeconfig');
  const argv = explicit ? [...args] : [...args, '--kubeconfig', controlPlane().adminKubeconfig];
  const code = await run({
    argv,
    env: options.env ?? {},
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
    ...(options.cwd ? { cwd: options.cwd } : {}),
    sleep: options.sleep ?? (() => Promise.resolve()),
  });
  return { code, stdout, stderr };
}

/** A real timer, for a test that lets check's confirmation wait pass as it would in production. */
export const realSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Creates a Node labelled for cleanup. */
export async function createNode(ds: KubeDatastore, name: string): Promise<void> {
  await ds.transport.request('POST', '/api/v1/nodes', {
    body: { apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { [TEST_LABEL]: '1' } } },
  });
}

/** Creates a Namespace. */
export async function createNamespace(ds: KubeDatastore, name: string): Promise<void> {
  await ds.transport.request('POST', '/api/v1/namespaces', {
    body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } },
  });
}

/** Creates a Pod on `node`; with `ip` also sets status (Running, podIP) through the status subresource. */
export async function createPod(
  ds: KubeDatastore,
  options: { namespace: string; name: string; node: string; ip?: string },
): Promise<Pod> {
  const body = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: options.name },
    spec: { nodeName: options.node, containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
  };
  const pod = await ds.transport.request<Pod>('POST', `/api/v1/namespaces/${options.namespace}/pods`, {
    body,
  });
  return options.ip === undefined ? pod : setPodIP(ds, pod, options.ip);
}

/** Sets a pod's status to Running with `ip`. */
export async function setPodIP(ds: KubeDatastore, pod: Pod, ip: string): Promise<Pod> {
  const path = `/api/v1/namespaces/${pod.metadata.namespace ?? ''}/pods/${pod.metadata.name}/status`;
  return ds.transport.request<Pod>('PUT', path, {
    body: { ...pod, status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] } },
  });
}

/** Deletes a pod at once (no kubelet: grace period 0). */
export async function deletePod(ds: KubeDatastore, namespace: string, name: string): Promise<void> {
  await ds.transport.request('DELETE', `/api/v1/namespaces/${namespace}/pods/${name}`, {
    body: { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0 },
  });
}

/** An IPPool object (created as is: no validatePool, as kubectl apply would). */
export function poolObject(name: string, cidr: string, blockSize?: number): IPPool {
  return {
    apiVersion: API_VERSION,
    kind: 'IPPool',
    metadata: { name },
    spec: { cidr, ...(blockSize ? { blockSize } : {}) },
  };
}

/** One allocation to seed: ordinal and owner. */
export interface SeedAllocation {
  ordinal: number;
  handle: string;
  node: string;
  namespace?: string;
  pod?: string;
  podUID?: string;
}

/**
 * A complete IPAMBlock object as the allocator would write it, built with core's pure block
 * functions (so labels always follow core's rules): created at t = 1 s so the block's sequence
 * starts at 1000 and the i-th allocation gets sequence 1001 + i. An allocation on a reserved
 * ordinal (which core refuses) is written in by hand: it is how a broken block is seeded.
 */
export function blockObject(options: {
  cidr: string;
  pool: string;
  affinity: string | null;
  allocations?: readonly SeedAllocation[];
}): IPAMBlock {
  const cidr = parseCidr(options.cidr);
  if (!cidr) throw new Error(`bad CIDR ${options.cidr}`);
  let block = newBlock({ cidr, pool: options.pool, node: options.affinity, nowMs: 1000 });
  for (const { ordinal, ...owner } of options.allocations ?? []) {
    const done = allocateOrdinal(block, ordinal, owner, ALLOCATED_AT_MS);
    if (done) block = done.block;
    else {
      const sequence = block.spec.sequence + 1;
      const allocation = { ...owner, allocatedAt: '2026-01-01T00:00:00Z', sequence };
      block = {
        ...block,
        spec: { ...block.spec, sequence, allocations: { ...block.spec.allocations, [ordinal]: allocation } },
      };
    }
  }
  return block;
}

const ALLOCATED_AT_MS = Date.parse('2026-01-01T00:00:00Z');

/** Removes every blockipam object, the test nodes, and the pods of `namespaces`. */
export async function cleanCluster(ds: KubeDatastore, namespaces: readonly string[] = []): Promise<void> {
  await wipeBlockipam(ds);
  await ds.transport.request('DELETE', '/api/v1/nodes', { query: { labelSelector: `${TEST_LABEL}=1` } });
  for (const ns of namespaces)
    await ds.transport.request('DELETE', `/api/v1/namespaces/${ns}/pods`, {
      query: { gracePeriodSeconds: '0' },
    });
}

/**
 * Pool p4 (10.244.0.0/24, /26 blocks) with one block on n1 holding .5 (pod `namespace`/a) and one
 * on n2, and n2's pod b borrowing .6 in n1's block — what the show and pool tests start from.
 */
export async function seedP4(ds: KubeDatastore, namespace: string): Promise<void> {
  await ds.pools.create(poolObject('p4', '10.244.0.0/24'));
  const allocations = [
    { ordinal: 5, handle: 'net.a.eth0', node: 'n1', namespace, pod: 'a', podUID: 'uid-a' },
    { ordinal: 6, handle: 'net.b.eth0', node: 'n2', namespace, pod: 'b', podUID: 'uid-b' },
  ];
  await ds.blocks.create(blockObject({ cidr: '10.244.0.0/26', pool: 'p4', affinity: 'n1', allocations }));
  await ds.blocks.create(blockObject({ cidr: '10.244.0.64/26', pool: 'p4', affinity: 'n2' }));
}

/** The kube-system namespace UID (the cluster identity a report carries). */
export async function kubeSystemUID(ds: KubeDatastore): Promise<string> {
  return (await ds.getNamespace('kube-system'))?.metadata.uid ?? '';
}

/**
 * Registers the hooks the ipamctl test files share: once, an admin datastore, a cluster with
 * no blockipam objects and the test namespace (when given); before each test, a clean cluster
 * again with the given Node objects, then `setup`; at the end, cleanup and the namespace's deletion.
 * @param onReady receives the datastore when it is made (files keep it in a module variable)
 */
export function cleanClusterHooks(options: {
  namespace?: string;
  nodes: readonly string[];
  onReady: (ds: KubeDatastore) => void;
  setup?: (ds: KubeDatastore) => Promise<void>;
}): void {
  let ds: KubeDatastore;
  const namespaces = options.namespace === undefined ? [] : [options.namespace];
  before(async () => {
    ds = adminDatastore();
    options.onReady(ds);
    await cleanCluster(ds);
    for (const ns of namespaces) await createNamespace(ds, ns);
  });
  beforeEach(async () => {
    await cleanCluster(ds, namespaces);
    for (const node of options.nodes) await createNode(ds, node);
    await options.setup?.(ds);
  });
  after(async () => {
    await cleanCluster(ds, namespaces);
    for (const ns of namespaces) await ds.transport.request('DELETE', `/api/v1/namespaces/${ns}`);
    ds.close();
  });
}
