/**
 * Route programming for the node agent (docs/design-agent.md "Routes"): the planner (pure),
 * the diff (pure), the iproute2 adapter and the loop the agent drives.
 */
export { planRoutes } from './plan.ts';
export type { Plan, PlanOptions } from './plan.ts';
export { diffRoutes, DEFAULT_METRIC } from './diff.ts';
export { IpRouteTable, parseBatchFailures } from './iproute2.ts';
export type { IpRouteTableOptions } from './iproute2.ts';
export { reconcileRoutes } from './reconcile.ts';
export type { PassOutcome, ReconcileOptions } from './reconcile.ts';
export { RouteProgrammer } from './programmer.ts';
export { groupSkips, MAX_LISTED, SkipReporter, skipCounts, skipLine } from './skip-report.ts';
export type { SkipGroup } from './skip-report.ts';
export type { RouteLog, RouteProgrammerOptions } from './programmer.ts';
export { RouteCommandError, isRouteCommandError } from './route-command-error.ts';
export { ROUTE_PROTOCOL } from './types.ts';
export type {
  DesiredRoute,
  InstalledRoute,
  RouteChange,
  RouteNode,
  RouteReason,
  RouteTable,
  RouteView,
  SkippedRoute,
} from './types.ts';
