/**
 * The audit snapshot: every object `ipamctl check` judges, read with paginated LISTs and no lock.
 *
 * Order is the soundness argument (docs/design-cli.md §The snapshot): IPAMBlocks are listed FIRST,
 * then pools, reservations, config, nodes and pods. An allocation or affinity seen in a block
 * was made for a pod / node that existed before the block LIST; so if that pod or node is
 * missing from a LIST taken after, it really has gone — a pod created during the check can never
 * be called leaked. Each LIST is one consistent view (pages share the first page's
 * resourceVersion); the resourceVersions are recorded in the report.
 */
import type { KubeTransport } from 'blockipam/core/kube';
import { API_VERSION, IPAM_CONFIG_NAME } from 'blockipam/core';
import type { IPAMBlock, IPAMConfigObject, IPPool, IPReservation, KubeObject, Pod } from 'blockipam/core';

/** A Pod, the fields the audit reads: core's Pod. */
export type AuditPod = Pod;

/** What was read, with the list resourceVersion of each kind. */
export interface Snapshot {
  blocks: IPAMBlock[];
  pools: IPPool[];
  reservations: IPReservation[];
  config: IPAMConfigObject | undefined;
  nodes: Set<string>;
  pods: AuditPod[];
  /** List resourceVersion per kind, e.g. {ipamblocks: "1234", pods: "1240", …}. */
  resourceVersions: Record<string, string>;
  /** When the first LIST was sent, ms. */
  startedAtMs: number;
}

/** Progress callback: a kind and how many objects were read so far. */
export type Progress = (kind: string, count: number) => void;

// 500 objects per page: a page of full /26 blocks stays a few MB; the API server's default
// continue-token lifetime (5 min, etcd compaction) is far longer than a page takes.
const PAGE_SIZE = 500;
// One retry when the continue token expired (410 Gone) mid-list: start that kind over.
const LIST_ATTEMPTS = 2;

interface ListPage<T> {
  metadata?: { resourceVersion?: string; continue?: string };
  items?: T[];
}

/**
 * Lists every object at `path` in pages; all pages come from the first page's resourceVersion.
 * @returns the items and that resourceVersion
 */
export async function listAll<T>(
  api: KubeTransport,
  path: string,
  kind: string,
  progress?: Progress,
): Promise<{ items: T[]; resourceVersion: string }> {
  for (let attempt = 1; ; attempt++) {
    const items: T[] = [];
    let token: string | undefined;
    let resourceVersion = '';
    try {
      do {
        const page = await api.request<ListPage<T>>('GET', path, {
          query: { limit: String(PAGE_SIZE), continue: token },
        });
        if (!resourceVersion) resourceVersion = page.metadata?.resourceVersion ?? '';
        items.push(...(page.items ?? []));
        token = page.metadata?.continue || undefined;
        progress?.(kind, items.length);
      } while (token);
      return { items, resourceVersion };
    } catch (error) {
      const gone = (error as { status?: number }).status === 410;
      if (!gone || attempt >= LIST_ATTEMPTS) throw error;
    }
  }
}

const GROUP = `/apis/${API_VERSION}`;

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
export async function takeSnapshot(api: KubeTransport, options: SnapshotOptions = {}): Promise<Snapshot> {
  const { progress, nowMs = Date.now() } = options;
  const resourceVersions: Record<string, string> = {};
  const read = async <T>(kind: string, path: string): Promise<T[]> => {
    const { items, resourceVersion } = await listAll<T>(api, path, kind, progress);
    resourceVersions[kind] = resourceVersion;
    return items;
  };
  const blocks = await read<IPAMBlock>('ipamblocks', `${GROUP}/ipamblocks`);
  await options.afterBlockList?.();
  const [pools, reservations, configs, nodes, pods] = await Promise.all([
    read<IPPool>('ippools', `${GROUP}/ippools`),
    read<IPReservation>('ipreservations', `${GROUP}/ipreservations`),
    read<IPAMConfigObject>('ipamconfigs', `${GROUP}/ipamconfigs`),
    read<KubeObject>('nodes', '/api/v1/nodes'),
    read<AuditPod>('pods', '/api/v1/pods'),
  ]);
  return {
    blocks,
    pools,
    reservations,
    config: configs.find((c) => c.metadata.name === IPAM_CONFIG_NAME),
    nodes: new Set(nodes.map((n) => n.metadata.name)),
    pods,
    resourceVersions,
    startedAtMs: nowMs,
  };
}

/** Lists the blocks again (the confirmation read of pod-IP candidates). */
export async function relistBlocks(
  api: KubeTransport,
  progress?: Progress,
): Promise<{ items: IPAMBlock[]; resourceVersion: string }> {
  return listAll<IPAMBlock>(api, `${GROUP}/ipamblocks`, 'ipamblocks', progress);
}
