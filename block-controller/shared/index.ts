/**
 * Scaffolding shared by the node agent and the cluster controller (docs/design-block-controller.md):
 * kube clients, JSON logs, metrics, health endpoints, watches, shutdown.
 */
export { connectKube } from './kube.ts';
export type { KubeConnection, KubeConnectionOptions } from './kube.ts';
export { createLogger, errorFields, F, LOG_LEVELS } from './log.ts';
export type { Logger, LogLevel } from './log.ts';
export {
  createMetrics,
  METRIC_PREFIX,
  metricMakers,
  observeTransport,
  readinessGauge,
  scrapedCounter,
} from './metrics.ts';
export type { DaemonMetrics } from './metrics.ts';
export { failingChecks, startHttpServer } from './http-server.ts';
export { watchKind } from './informer.ts';
export type { WatchedKind, WatchEvent } from './informer.ts';
export { Lifecycle } from './lifecycle.ts';
