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
import { IPAM_CONFIG_NAME, listAll } from 'blockipam/core';
import type {
  Datastore,
  IPAMBlock,
  IPAMConfigObject,
  IPPool,
  IPReservation,
  Page,
  PageOptions,
  Pod,
} from 'blockipam/core';

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

/**
 * Every object of one kind through the Datastore port's paged LIST (core's `listAll`: pages of
 * 500 at the first page's resourceVersion, started over once on an expired continue token).
 */
function readAll<T>(
  listPage: (options: PageOptions) => Promise<Page<T>>,
  kind: string,
  progress: Progress | undefined,
): Promise<{ items: T[]; resourceVersion: string }> {
  return listAll(listPage, { onPage: (count) => progress?.(kind, count) });
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
  const read = async <T>(kind: string, listPage: (o: PageOptions) => Promise<Page<T>>): Promise<T[]> => {
    const { items, resourceVersion } = await readAll(listPage, kind, progress);
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
    read('pods', (o) => ds.listPodPage(o)),
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
export function relistBlocks(
  ds: Datastore,
  progress?: Progress,
): Promise<{ items: IPAMBlock[]; resourceVersion: string }> {
  return readAll((o) => ds.blocks.listPage(o), 'ipamblocks', progress);
}
