/**
 * The diff between the routes the planner wants and the routes of our protocol the kernel
 * holds: the changes that make the second equal the first, and nothing else; another protocol's
 * route equal to a wanted one is taken over, no other is touched. Pure.
 */
import type { IPFamily } from 'blockipam/core';
import type { DesiredRoute, InstalledRoute, RouteChange } from './types.ts';

/** The kernel's default metric when a route is added without one (IPv4 0, IPv6 1024). */
const DEFAULT_METRIC: Readonly<Record<IPFamily, number>> = { 4: 0, 6: 1024 };

/**
 * Changes turning `installed` (our protocol's routes only) into `desired`; `others` are the
 * routes of other protocols.
 *
 * - a desired route with an equal installed one (same type, gateway, default metric) is left
 *   alone — a second pass over an unchanged view yields no change (idempotent);
 * - a desired route whose destination holds our route at the default metric with another next
 *   hop or type: `replace` (one atomic change, no gap in reachability);
 * - a desired route with none of ours at the default metric, whose destination holds another
 *   protocol's route equal to it (same type and gateway, default metric — kindnetd's or a
 *   static route to the same node, as when a host-local cluster is adopted): `replace`, which
 *   takes it over in one atomic change (no gap when its owner stops);
 * - a desired route with none of ours nor an equal one: `add` — never `replace`, which would
 *   overwrite another protocol's different route for the same destination and metric (an `add`
 *   then fails with "File exists" and the route is reported, not forced);
 * - every other installed route (stale, or an extra of ours for a desired destination at
 *   another metric): `delete`, carrying its metric so that exactly that route goes.
 *
 * Deletes come first, then adds and replaces, each group sorted by destination.
 */
export function diffRoutes(
  desired: readonly DesiredRoute[],
  installed: readonly InstalledRoute[],
  others: readonly InstalledRoute[] = [],
): RouteChange[] {
  const byDst = new Map<string, InstalledRoute[]>();
  for (const route of installed) byDst.set(route.dst, [...(byDst.get(route.dst) ?? []), route]);
  const deletes: RouteChange[] = [];
  const writes: RouteChange[] = [];
  const wanted = new Set<string>();
  for (const want of desired) {
    wanted.add(want.dst);
    const have = byDst.get(want.dst) ?? [];
    const keep = have.find((r) => equal(want, r));
    const slot = keep ?? have.find((r) => metricOf(r) === DEFAULT_METRIC[r.family]);
    const takeOver = !slot && others.some((r) => r.dst === want.dst && equal(want, r));
    if (!keep) writes.push({ op: slot || takeOver ? 'replace' : 'add', route: want });
    for (const r of have) if (r !== slot) deletes.push({ op: 'delete', route: r });
  }
  for (const [dst, have] of byDst)
    if (!wanted.has(dst)) for (const r of have) deletes.push({ op: 'delete', route: r });
  const byRouteDst = (a: RouteChange, b: RouteChange): number =>
    a.route.dst < b.route.dst ? -1 : a.route.dst > b.route.dst ? 1 : 0;
  return [...deletes.sort(byRouteDst), ...writes.sort(byRouteDst)];
}

function metricOf(route: InstalledRoute): number {
  return route.metric ?? DEFAULT_METRIC[route.family];
}

function equal(want: DesiredRoute, have: InstalledRoute): boolean {
  return (
    want.type === have.type &&
    (want.gateway ?? '') === (have.gateway ?? '') &&
    metricOf(have) === DEFAULT_METRIC[have.family]
  );
}
