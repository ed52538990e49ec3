/**
 * A node-local cache of the cluster-wide allocation inputs (IPAMConfig, IPPools,
 * IPReservations: core's PoolSnapshot) and this node's labels, so a warm ADD costs one LIST
 * and one UPDATE instead of four more reads (docs/design-plugin.md "Snapshot
 * cache"). A stale snapshot is safe for uniqueness: every write is still a compare-and-swap on
 * the block. Staleness can only delay a pool / reservation / node-label change by `ttlMs`, and
 * failures are never decided on cached data (the caller retries with a fresh read).
 *
 * File: `<dir>/snapshot-<hash of apiserver+kubeconfig+node>.json`, written atomically
 * (atomic-file.ts: tmp + rename, a dead writer's tmp pruned; not under the host lock: readers see
 * the old or the new file whole). Raw objects are
 * stored; the snapshot is rebuilt from them with core's snapshotOf.
 */
import { snapshotOf, type PoolSnapshot, IPAM_CONFIG_NAME } from 'blockipam/core';
import type { Datastore, IPAMConfigObject, IPPool, IPReservation } from 'blockipam/core';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from './atomic-file.ts';
import { ensureDir } from './ensure-dir.ts';

interface Raw {
  readonly savedAtMs: number;
  readonly config: IPAMConfigObject | null;
  readonly pools: IPPool[];
  readonly reservations: IPReservation[];
  readonly nodeLabels: Record<string, string>;
}

export interface Inputs {
  readonly snapshot: PoolSnapshot;
  readonly nodeLabels: Readonly<Record<string, string>>;
  /** True when read from the cache file (the caller re-reads before deciding a failure). */
  readonly cached: boolean;
}

export interface SnapshotCacheOptions {
  /** Directory of the cache file. */
  readonly dir: string;
  /** Distinguishes clusters sharing a host (apiserver URL, kubeconfig path). */
  readonly key: string;
  /** Max age in ms; 0 disables the cache. */
  readonly ttlMs: number;
  readonly node: string;
  readonly now?: () => number;
}

/** Loads the inputs: from the cache when fresh, else with 4 reads (and refreshes the cache). */
export async function loadInputs(ds: Datastore, o: SnapshotCacheOptions, fresh = false): Promise<Inputs> {
  const now = (o.now ?? Date.now)();
  const file = join(
    o.dir,
    `snapshot-${createHash('sha256').update(`${o.key}\0${o.node}`).digest('hex').slice(0, 16)}.json`,
  );
  if (o.ttlMs > 0 && !fresh) {
    try {
      const raw = JSON.parse(readFileSync(file, 'utf8')) as Raw;
      if (now - raw.savedAtMs < o.ttlMs && now >= raw.savedAtMs)
        return { snapshot: snapshotOf(raw, raw.savedAtMs), nodeLabels: raw.nodeLabels, cached: true };
    } catch {
      // absent or unreadable: read fresh
    }
  }
  // A routine refresh may read the API server's watch cache as it is (`cached`: no wait for
  // etcd's progress notification, 60 ms here after a write elsewhere) — these inputs are
  // served up to ttlMs old anyway. A `fresh` read (re-deciding a failure) stays consistent.
  const [config, pools, reservations, node] = await Promise.all([
    ds.configs.get(IPAM_CONFIG_NAME),
    ds.pools.list({ cached: !fresh }),
    ds.reservations.list({ cached: !fresh }),
    ds.getNode(o.node),
  ]);
  const raw: Raw = {
    savedAtMs: now,
    config: config ?? null,
    pools,
    reservations,
    nodeLabels: node?.metadata.labels ?? {},
  };
  if (o.ttlMs > 0) {
    try {
      ensureDir(o.dir);
      writeFileAtomic(file, JSON.stringify(raw));
    } catch {
      // a cache that cannot be written only costs reads
    }
  }
  return { snapshot: snapshotOf(raw, now), nodeLabels: raw.nodeLabels, cached: false };
}
