/** Plain-object fixtures and a fake clock for the allocator tests (memory datastore). */
import {
  checkBlockInvariants,
  loadSnapshot,
  MemoryDatastore,
  newStats,
  planUpkeep,
  releaseIdleBlock,
  releaseUnownedEmptyBlocks,
  trustedAffine,
} from 'blockipam/core';
import type {
  AllocatorOptions,
  Datastore,
  AllocatorStats,
  IPAMConfigSpec,
  IPPool,
  IPPoolSpec,
  IPReservation,
  MemorySeed,
} from 'blockipam/core';

export const T0 = Date.parse('2026-11-29T08:00:00Z');

/** An IPPool object; `created` orders pools (older wins an overlap). */
export function pool(name: string, spec: IPPoolSpec, created = '2026-11-01T00:00:00Z'): IPPool {
  return {
    apiVersion: 'ipam.blockipam.io/v1alpha1',
    kind: 'IPPool',
    metadata: { name, creationTimestamp: created },
    spec,
  };
}

export function reservation(name: string, cidrs: string[]): IPReservation {
  return { metadata: { name }, spec: { reservedCIDRs: cidrs } };
}

/** A fake clock the test moves by hand, and allocator options using it (no real sleeping). */
export interface World {
  ds: MemoryDatastore;
  stats: AllocatorStats;
  now: { ms: number };
  options: AllocatorOptions;
  /** Every block's invariant problems (empty = all hold). */
  problems(): Promise<string[]>;
}

/** A memory datastore seeded with pools, config, reservations, nodes and namespaces. */
export function world(
  seed: {
    pools?: IPPool[];
    config?: IPAMConfigSpec;
    reservations?: IPReservation[];
    nodes?: Record<string, Record<string, string>>;
    namespaces?: Record<string, Record<string, string>>;
  } = {},
): World {
  const now = { ms: T0 };
  const memorySeed: MemorySeed = {
    pools: seed.pools ?? [pool('default-v4', { cidr: '10.244.0.0/16' })],
    configs: seed.config ? [{ metadata: { name: 'default' }, spec: seed.config }] : [],
    reservations: seed.reservations ?? [],
    nodes: Object.entries(seed.nodes ?? {}).map(([name, labels]) => ({ metadata: { name, labels } })),
    namespaces: Object.entries(seed.namespaces ?? {}).map(([name, labels]) => ({
      metadata: { name, labels },
    })),
  };
  const ds = new MemoryDatastore(memorySeed, { clock: () => now.ms });
  const stats = newStats();
  let seed32 = 7;
  const random = (): number => {
    seed32 = (seed32 * 1103515245 + 12345) % 2147483648;
    return seed32 / 2147483648;
  };
  return {
    ds,
    stats,
    now,
    options: { clock: () => now.ms, random, sleep: () => Promise.resolve(), stats },
    problems: async () => (await ds.blocks.list()).flatMap((b) => checkBlockInvariants(b, { nowMs: now.ms })),
  };
}

/** A pod reference for handle `net.<id>.eth0`. */
export function pod(
  id: string,
  namespace = 'default',
): { handle: string; pod: { namespace: string; name: string; uid: string } } {
  return { handle: `net.${id}.eth0`, pod: { namespace, name: `pod-${id}`, uid: `uid-${id}` } };
}

/**
 * One pass of the idle-block release production runs over every node: each node's agent
 * (core's planUpkeep releases, node labels {}, then releaseIdleBlock) and the controller's release
 * of unowned empty blocks (releaseUnownedEmptyBlocks).
 * @param nowMs the clock of the pass (the allocator's `clock` when given)
 * @returns the names of the blocks deleted
 */
export async function releaseIdleBlocks(
  ds: Datastore,
  nowMs: number,
  options: AllocatorOptions = {},
): Promise<string[]> {
  const snapshot = await loadSnapshot(ds, nowMs);
  const blocks = await ds.blocks.list();
  const released: string[] = [];
  for (const node of new Set(blocks.flatMap((b) => (b.spec.affinity === null ? [] : [b.spec.affinity])))) {
    const affine = trustedAffine(blocks, snapshot.pools, node);
    const plan = planUpkeep({ node, nodeLabels: {}, snapshot, affine, nowMs });
    for (const block of plan.releases)
      if (await releaseIdleBlock(ds, block, options)) released.push(block.metadata.name);
  }
  const unowned = await releaseUnownedEmptyBlocks(ds, blocks, snapshot.settings, options);
  return [...released, ...unowned.released];
}
