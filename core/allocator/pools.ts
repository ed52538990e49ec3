/**
 * Pool choice (docs/design-core.md §2): the cluster-wide snapshot an allocation decides with (settings,
 * pools, reservations), which pools are usable at all (enabled, not being deleted, not
 * overlapping an older pool), and which of them a given pod on a given node may use.
 */
import { DEFAULT_BLOCK_SIZE } from '../address/block-cidr.ts';
import { cidrsOverlap, formatCidr, mustParseCidr, parseCidr } from '../address/ip.ts';
import type { Cidr, IPFamily } from '../address/ip.ts';
import { IPAM_CONFIG_NAME, settingsOf } from '../config.ts';
import type { IPAMSettings } from '../config.ts';
import type { Datastore } from '../datastore/datastore.ts';
import type { IPAMConfigObject, IPPool, IPReservation } from '../resources.ts';
import { matchesSelector } from '../selector.ts';
import type { PoolExclusion, RequestRefusal } from './failure-text.ts';

/** A pool that may not be used because an older pool overlaps it. */
export interface ShadowedPool {
  readonly pool: string;
  /** The older pool it overlaps. */
  readonly by: string;
}

/** Cluster-wide inputs of an allocation; safe to reuse for a while (see docs/design-core.md). */
export interface PoolSnapshot {
  readonly settings: IPAMSettings;
  /** Every pool, as listed. */
  readonly pools: readonly IPPool[];
  /** Pools allocations may come from (enabled, not deleting, not shadowed), oldest first. */
  readonly usable: readonly IPPool[];
  readonly shadowed: readonly ShadowedPool[];
  /** CIDRs of every IPReservation. */
  readonly reservations: readonly Cidr[];
  /** clock() when loaded, ms. */
  readonly loadedAtMs: number;
}

/** Loads a snapshot: GET IPAMConfig `default`, LIST IPPools, LIST IPReservations (3 reads). */
export async function loadSnapshot(ds: Datastore, nowMs: number = Date.now()): Promise<PoolSnapshot> {
  const [config, pools, reservations] = await Promise.all([
    ds.configs.get(IPAM_CONFIG_NAME),
    ds.pools.list(),
    ds.reservations.list(),
  ]);
  return snapshotOf({ config, pools, reservations }, nowMs);
}

/** The objects a snapshot is made of, as stored (IPAMConfig `default` absent: null/undefined). */
export interface SnapshotObjects {
  readonly config: IPAMConfigObject | null | undefined;
  readonly pools: readonly IPPool[];
  readonly reservations: readonly IPReservation[];
}

/** A snapshot of objects read elsewhere (the agent's watches, ipamctl's reads); pure. */
export function snapshotOf(objects: SnapshotObjects, nowMs: number): PoolSnapshot {
  const cidrs = objects.reservations.flatMap((r) =>
    r.spec.reservedCIDRs.map((text) => parseCidr(text, { strict: false })).filter((c) => c !== undefined),
  );
  return {
    settings: settingsOf(objects.config ?? undefined),
    pools: objects.pools,
    ...usablePools(objects.pools),
    reservations: cidrs,
    loadedAtMs: nowMs,
  };
}

/** The pool's CIDR. */
export function poolCidr(pool: IPPool): Cidr {
  return mustParseCidr(pool.spec.cidr);
}

/** The pool's block prefix length (default 26 / 122). */
export function poolBlockSize(pool: IPPool): number {
  return pool.spec.blockSize ?? DEFAULT_BLOCK_SIZE[poolCidr(pool).family];
}

/**
 * Splits pools into usable and shadowed. A pool overlapping an older pool (creationTimestamp,
 * then name) is never used: a CRD schema cannot stop kubectl from creating it, and two pools
 * over one range could hand out one address twice.
 */
export function usablePools(pools: readonly IPPool[]): { usable: IPPool[]; shadowed: ShadowedPool[] } {
  const ordered = [...pools].sort(
    (a, b) =>
      (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') ||
      a.metadata.name.localeCompare(b.metadata.name),
  );
  const usable: IPPool[] = [];
  const shadowed: ShadowedPool[] = [];
  const accepted: IPPool[] = [];
  for (const pool of ordered) {
    const cidr = parseCidr(pool.spec.cidr);
    if (!cidr) continue;
    const older = accepted.find((other) => cidrsOverlap(poolCidr(other), cidr));
    if (older) {
      shadowed.push({ pool: pool.metadata.name, by: older.metadata.name });
      continue;
    }
    accepted.push(pool);
    if (!pool.spec.disabled && !pool.metadata.deletionTimestamp) usable.push(pool);
  }
  return { usable, shadowed };
}

/**
 * Whether usable `pool` serves a node with `nodeLabels` when no pod is at hand (headroom,
 * pre-claim): its nodeSelector matches and it is `Automatic`, or `Manual` and named in `manual`
 * (the Manual pools pending pods on the node request). The namespaceSelector is not read: some
 * namespace may use the pool on this node.
 */
export function servesNode(
  pool: IPPool,
  nodeLabels: Readonly<Record<string, string>>,
  manual?: ReadonlySet<string>,
): boolean {
  if (!matchesSelector(pool.spec.nodeSelector, nodeLabels)) return false;
  return (
    (pool.spec.assignmentMode ?? 'Automatic') === 'Automatic' || manual?.has(pool.metadata.name) === true
  );
}

/** Who asks: the node's and the pod namespace's labels, and pools the pod requested. */
export interface PoolRequest {
  family: IPFamily;
  nodeLabels: Readonly<Record<string, string>>;
  namespaceLabels: Readonly<Record<string, string>>;
  /** Pool names or CIDRs from the pod / namespace annotation; absent or empty = automatic. */
  requested?: readonly string[];
}

/** A requested pool refused: why (failure-text.ts RequestRefusal) and whether it is switched off. */
export interface PoolRefusal {
  refused: RequestRefusal;
  /** True when the pool is disabled or being deleted (AssignFailure PoolDisabled). */
  disabled: boolean;
}

/**
 * The pools of `request.family` this pod on this node may use, in order of preference.
 * Automatic: usable Automatic pools whose nodeSelector and namespaceSelector match.
 * Requested (the request names a pool of this family, or one that does not exist): exactly those, each of which must be usable and —
 * unlike Calico — still match both selectors, so a tenant cannot pick another namespace's pool.
 * @returns the pools, or the first requested pool that is refused and why (failure-text.ts
 *   requestRefusedText turns it into the message)
 */
export function selectPools(snapshot: PoolSnapshot, request: PoolRequest): { pools: IPPool[] } | PoolRefusal {
  const ofFamily = (pool: IPPool): boolean => poolCidr(pool).family === request.family;
  const named = (request.requested ?? []).map((ref) => ({ ref, pool: findPool(snapshot.pools, ref) }));
  const mine = named.filter(({ pool }) => pool === undefined || ofFamily(pool));
  if (mine.length === 0) {
    return {
      pools: snapshot.usable.filter(
        (pool) => ofFamily(pool) && exclusionOf(snapshot, pool, request) === undefined,
      ),
    };
  }
  const pools: IPPool[] = [];
  for (const { ref, pool } of mine) {
    if (!pool) return { refused: { kind: 'missing', ref }, disabled: false };
    const why = exclusionOf(snapshot, pool, request, { requested: true });
    if (why === undefined) {
      pools.push(pool);
      continue;
    }
    const name = pool.metadata.name;
    if (typeof why === 'object')
      return { refused: { kind: 'shadowed', pool: name, by: why.shadowedBy }, disabled: false };
    if (why === 'disabled' || why === 'deleting')
      return { refused: { kind: why, pool: name }, disabled: true };
    if (why === 'Manual') throw new Error('unreachable: a requested pool may be Manual');
    return { refused: { kind: why, pool: name }, disabled: false };
  }
  return { pools };
}

/**
 * Why `pool` may not serve this request (undefined: it may): overlapping an older pool, Manual
 * (unless requested), a selector that excludes the namespace or the node, disabled or being
 * deleted — checked in that order: the namespace before the node (a tenant's pool is refused for
 * the namespace first), and disabled last, so "disabled" means the pool would serve once enabled.
 * One rule for selectPools and for the texts that list pools passed over.
 */
function exclusionOf(
  snapshot: PoolSnapshot,
  pool: IPPool,
  request: PoolRequest,
  options: { requested?: boolean } = {},
): PoolExclusion | undefined {
  const shadow = snapshot.shadowed.find((s) => s.pool === pool.metadata.name);
  if (shadow) return { shadowedBy: shadow.by };
  if (!options.requested && (pool.spec.assignmentMode ?? 'Automatic') !== 'Automatic') return 'Manual';
  if (!matchesSelector(pool.spec.namespaceSelector, request.namespaceLabels)) return 'namespaceSelector';
  if (!matchesSelector(pool.spec.nodeSelector, request.nodeLabels)) return 'nodeSelector';
  if (!snapshot.usable.includes(pool)) return pool.metadata.deletionTimestamp ? 'deleting' : 'disabled';
  return undefined;
}

/** Every pool of the family passed over for an automatic request, with why (for noPoolText). */
export function passedOver(
  snapshot: PoolSnapshot,
  request: PoolRequest,
): { pool: string; why: PoolExclusion }[] {
  return snapshot.pools.flatMap((pool) => {
    const cidr = parseCidr(pool.spec.cidr);
    if (cidr?.family !== request.family) return [];
    const why = exclusionOf(snapshot, pool, request);
    return why === undefined ? [] : [{ pool: pool.metadata.name, why }];
  });
}

/** A pool by name or by CIDR text. */
function findPool(pools: readonly IPPool[], ref: string): IPPool | undefined {
  const cidr = parseCidr(ref);
  return pools.find(
    (pool) => pool.metadata.name === ref || (cidr !== undefined && pool.spec.cidr === formatCidr(cidr)),
  );
}

/**
 * True when `pool` holds its nodes' podCIDRs as their blocks (`spec.podCIDRBlocks`,
 * core/adopt/podcidr-blocks.ts): the controller creates those blocks; a node never claims a block
 * of it, never borrows from one, and never releases one idle.
 */
export function isPodCIDRPool(pool: IPPool): boolean {
  return pool.spec.podCIDRBlocks === true;
}
