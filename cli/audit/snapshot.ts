/**
 * The audit snapshot: every object `ipamctl check` judges, read with paginated LISTs and no lock.
 *
 * Order is the soundness argument (docs/design-cli.md §The snapshot): IPAMBlocks are listed FIRST,
 * then pools, reservations, config, nodes and pods. An allocation or affinity seen in a block
 * was made for a pod / node that existed before the block LIST; so if that pod or node is
 * missing from a LIST taken after, it really has gone — a pod created during the check can never
 * be called leaked. Each LIST is one consistent view (pages share the first page's
 * resourceVersion); the resourceVersions are recorded in the report. Every LIST goes through the
 * Datastore port (its paged LIST), so the audit runs on the memory store as on the API server.
 */
import { IPAM_CONFIG_NAME, isAdoptionOptedIn, listAll, podCIDRsOf } from 'blockipam/core';
import type {
  Cidr,
  Datastore,
  IPAMBlock,
  IPAMConfigObject,
  IPPool,
  IPReservation,
  ObjectMeta,
  Node,
  Page,
  PageOptions,
  Pod,
} from 'blockipam/core';

/**
 * A Pod, only the fields the audit reads (core's Pod with metadata cut to identity and deletion):
 * what the snapshot keeps of each listed pod, so 100,000 pods do not hold their whole objects
 * (spec, managedFields: ~1.7 KB of JSON each) for the length of the check.
 */
export type AuditPod = Omit<Pod, 'metadata'> & {
  metadata: Pick<ObjectMeta, 'name' | 'namespace' | 'uid' | 'deletionTimestamp'>;
};

/** The {@link AuditPod} of a listed pod: every field a check reads, nothing else. */
export function auditPod(pod: Pod): AuditPod {
  const { name, namespace, uid, deletionTimestamp } = pod.metadata;
  const { spec, status } = pod;
  return {
    metadata: { name, namespace, uid, deletionTimestamp },
    ...(spec ? { spec: { nodeName: spec.nodeName, hostNetwork: spec.hostNetwork } } : {}),
    ...(status ? { status: { phase: status.phase, podIP: status.podIP, podIPs: status.podIPs } } : {}),
  };
}

/** What the audit keeps of a Node besides its name: its adoption from host-local (docs/design-adopt.md). */
export interface AuditNode {
  /** Labelled `blockipam.io/adopt=true` (core's isAdoptionOptedIn). */
  optedIn: boolean;
  /** Core's podCIDRsOf: `spec.podCIDRs`, else `spec.podCIDR`; [] when it has none. */
  podCIDRs: Cidr[];
}

/** The {@link AuditNode} of a listed Node (its spec as the API server sent and validated it). */
export function auditNode(node: Node): AuditNode {
  return { optedIn: isAdoptionOptedIn(node), podCIDRs: podCIDRsOf(node) };
}

/** What was read, with the list resourceVersion of each kind. */
export interface Snapshot {
  blocks: IPAMBlock[];
  pools: IPPool[];
  reservations: IPReservation[];
  config: IPAMConfigObject | undefined;
  nodes: Set<string>;
  /** Each Node by name: its opt-in to adoption and its podCIDRs (what `adoption-pending` reads). */
  nodeAdoption: Map<string, AuditNode>;
  pods: AuditPod[];
  /** List resourceVersion per kind, e.g. {ipamblocks: "1234", pods: "1240", …}. */
  resourceVersions: Record<string, string>;
  /** When the first LIST was sent, ms. */
  startedAtMs: number;
}

/** Told after each page of a LIST: the kind (`pods`) and how many of it were read so far. */
export type Progress = (kind: string, count: number) => void;

/**
 * Pods per page of the pod LIST (check's and adopt plan's): 2,000 (~3.5 MB of JSON), where other kinds use core's 500. The
 * API server (v1.37) serves a paged LIST from its watch cache by copying every object from the
 * page's start to the end of the list, then cutting `limit` of them
 * (`apiserver_storage_list_fetched_objects_total` grows by 100,000 for a first page of 500 of
 * 100,000 pods): a LIST of n objects costs it about n²/(2·limit) copies — 10 million for
 * 100,000 pods in pages of 500, 2.5 million in pages of 2,000. Measured on 100,000 pods
 * (2026-12-02, docs/design-cli.md §Cost of check): API server CPU per check 8.1–8.7 s at 500, 3.1 s at
 * 2,000; 5,000 saved no more server CPU and cost the client more.
 */
export const POD_PAGE_SIZE = 2000;

/**
 * Every object of one kind through the Datastore port's paged LIST (core's `listAll`: pages of
 * `limit`, default 500, at the first page's resourceVersion, the next page asked for while one
 * is decoded, started over once on an expired continue token).
 */
export function readAll<T>(
  listPage: (options: PageOptions) => Promise<Page<T>>,
  kind: string,
  progress: Progress | undefined,
  limit?: number,
): Promise<{ items: T[]; resourceVersion: string }> {
  return listAll(listPage, { ...(limit ? { limit } : {}), onPage: (count) => progress?.(kind, count) });
}

/** Options of {@link takeSnapshot}. */
export interface SnapshotOptions {
  progress?: Progress;
  /** Recorded as the snapshot's start, ms; default Date.now(). */
  nowMs?: number;
  /**
   * Test seam: runs after the block LIST and before the other LISTs — exactly where churn
   * (a release, a pod deletion) makes the two views disagree.
   */
  afterBlockList?: () => Promise<void>;
}

/** Reads the snapshot: blocks first, then what justifies them (see the module comment). */
export async function takeSnapshot(ds: Datastore, options: SnapshotOptions = {}): Promise<Snapshot> {
  const { progress, nowMs = Date.now() } = options;
  const resourceVersions: Record<string, string> = {};
  const read = async <T>(
    kind: string,
    listPage: (o: PageOptions) => Promise<Page<T>>,
    limit?: number,
  ): Promise<T[]> => {
    const { items, resourceVersion } = await readAll(listPage, kind, progress, limit);
    resourceVersions[kind] = resourceVersion;
    return items;
  };
  const blocks = await read('ipamblocks', (o) => ds.blocks.listPage(o));
  await options.afterBlockList?.();
  const [pools, reservations, configs, nodes, pods] = await Promise.all([
    read('ippools', (o) => ds.pools.listPage(o)),
    read('ipreservations', (o) => ds.reservations.listPage(o)),
    read('ipamconfigs', (o) => ds.configs.listPage(o)),
    read('nodes', (o) => ds.listNodePage(o)),
    read(
      'pods',
      async (o) => {
        const page = await ds.listPodPage(o);
        return { ...page, items: page.items.map(auditPod) };
      },
      POD_PAGE_SIZE,
    ),
  ]);
  return {
    blocks,
    pools,
    reservations,
    config: configs.find((c) => c.metadata.name === IPAM_CONFIG_NAME),
    nodes: new Set(nodes.map((n) => n.metadata.name)),
    nodeAdoption: new Map(nodes.map((n) => [n.metadata.name, auditNode(n)])),
    pods,
    resourceVersions,
    startedAtMs: nowMs,
  };
}

/** Lists the blocks again (the confirmation read of pod-IP candidates). */
export function relistBlocks(
  ds: Datastore,
  progress?: Progress,
): Promise<{ items: IPAMBlock[]; resourceVersion: string }> {
  return readAll((o) => ds.blocks.listPage(o), 'ipamblocks', progress);
}
