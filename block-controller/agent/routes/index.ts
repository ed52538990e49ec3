/**
 * Route programming for the node agent (docs/design-agent.md "Routes"): the planner (pure),
 * the diff (pure), the iproute2 adapter and the loop the agent drives.
 */
export { planRoutes } from './plan.ts';
export { diffRoutes } from './diff.ts';
export { IpRouteTable, parseBatchFailures } from './iproute2.ts';
export { reconcileRoutes } from './reconcile.ts';
export type { PassOutcome } from './reconcile.ts';
export { RouteProgrammer } from './programmer.ts';
export { MAX_LISTED, SkipReporter, skipCounts, skipLine } from './skip-report.ts';
export type { RouteProgrammerOptions } from './programmer.ts';
export { RouteCommandError, isRouteCommandError } from './route-command-error.ts';
export type {
  DesiredRoute,
  InstalledRoute,
  RouteChange,
  RouteNode,
  RouteTable,
  RouteView,
  SkippedRoute,
} from './types.ts';
