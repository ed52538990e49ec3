/**
 * Prometheus metrics of a daemon through prom-client: one Registry per process (not the
 * library's global one, so tests can run several), Node's default process metrics, and the
 * counters every daemon shares. Names follow Prometheus conventions under the `blockipam_`
 * prefix (`_total` for counters, base units).
 */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { KubeTransport } from 'blockipam/core/kube';

export const METRIC_PREFIX = 'blockipam_';

/** The registry and the counters shared by the agent and the controller. */
export interface DaemonMetrics {
  readonly registry: Registry;
  /** Failed API requests by `operation` (the daemon's loop name) and `reason` (error class). */
  readonly apiErrors: Counter<'operation' | 'reason'>;
  /** Compare-and-swap writes lost to a concurrent writer (409), by `operation`. */
  readonly conflicts: Counter<'operation'>;
  /** Watches restarted after an error, by `resource`. */
  readonly watchRestarts: Counter<'resource'>;
}

/**
 * A fresh registry with the default process metrics (`blockipam_process_*`, `blockipam_nodejs_*`)
 * and the shared counters; `component` becomes a constant `component` label on every series.
 */
export function createMetrics(component: string): DaemonMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ component });
  collectDefaultMetrics({ register: registry, prefix: METRIC_PREFIX });
  return {
    registry,
    apiErrors: new Counter({
      name: `${METRIC_PREFIX}api_errors_total`,
      help: 'API requests that failed, by operation and error class',
      labelNames: ['operation', 'reason'],
      registers: [registry],
    }),
    conflicts: new Counter({
      name: `${METRIC_PREFIX}api_conflicts_total`,
      help: 'Compare-and-swap writes that lost to a concurrent writer (HTTP 409)',
      labelNames: ['operation'],
      registers: [registry],
    }),
    watchRestarts: new Counter({
      name: `${METRIC_PREFIX}watch_restarts_total`,
      help: 'Watches restarted after an error',
      labelNames: ['resource'],
      registers: [registry],
    }),
  };
}

/**
 * Exposes a core KubeTransport's request counts as `blockipam_api_requests_total{method}`,
 * read from `transport.stats` at scrape time (the transport counts; nothing is counted twice).
 */
export function observeTransport(registry: Registry, transport: KubeTransport): void {
  const seen: Record<string, number> = {};
  new Counter({
    name: `${METRIC_PREFIX}api_requests_total`,
    help: 'API requests sent through the compare-and-swap datastore, by HTTP method',
    labelNames: ['method'],
    registers: [registry],
    collect() {
      for (const [method, count] of Object.entries(transport.stats.byMethod)) {
        const delta = count - (seen[method] ?? 0);
        if (delta > 0) this.inc({ method }, delta);
        seen[method] = count;
      }
    },
  });
}

/**
 * Exposes readiness as the gauge `blockipam_<name>{…labels}`: 1 while `failing()` is empty, else 0,
 * computed at scrape time. Pass the function `/readyz` answers from — `() => failingChecks(checks)`
 * over the same checks (shared/http-server.ts) — so the gauge is exactly the probe's answer.
 * @param name after the prefix, e.g. `agent_ready`
 * @param labels constant labels, e.g. `{ node }` (none for the controller)
 */
export function readinessGauge(
  registry: Registry,
  name: string,
  labels: Readonly<Record<string, string>>,
  failing: () => readonly string[],
): void {
  new Gauge({
    name: `${METRIC_PREFIX}${name}`,
    help: '1 while /readyz answers 200 (every readiness check passes), else 0',
    labelNames: Object.keys(labels),
    registers: [registry],
    collect() {
      this.set({ ...labels }, failing().length === 0 ? 1 : 0);
    },
  });
}
