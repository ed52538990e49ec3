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
  const { counter } = metricMakers(registry);
  return {
    registry,
    apiErrors: counter('api_errors_total', 'API requests that failed, by operation and error class', [
      'operation',
      'reason',
    ]),
    conflicts: counter(
      'api_conflicts_total',
      'Compare-and-swap writes that lost to a concurrent writer (HTTP 409)',
      ['operation'],
    ),
    watchRestarts: counter('watch_restarts_total', 'Watches restarted after an error', ['resource']),
  };
}

/**
 * Makers of the metrics a daemon registers on `registry`, each named `<prefix><name>` (prefix
 * default `blockipam_`): one definition per metric, labels typed.
 */
export function metricMakers(
  registry: Registry,
  prefix: string = METRIC_PREFIX,
): {
  gauge: <L extends string>(name: string, help: string, labelNames: L[]) => Gauge<L>;
  counter: <L extends string>(name: string, help: string, labelNames: L[]) => Counter<L>;
} {
  return {
    gauge: (name, help, labelNames) =>
      new Gauge({ name: prefix + name, help, labelNames, registers: [registry] }),
    counter: (name, help, labelNames) =>
      new Counter({ name: prefix + name, help, labelNames, registers: [registry] }),
  };
}

/**
 * A counter `<prefix><name>` read at scrape time from counts kept elsewhere (nothing is counted
 * twice): `read()` returns each series' labels and its count now, which only grows; the counter
 * adds what grew since the last scrape. Every series `read()` names exists from then on (at 0 too).
 */
export function scrapedCounter<L extends string>(
  registry: Registry,
  metric: { name: string; help: string; labelNames: L[]; prefix?: string },
  read: () => Iterable<readonly [Partial<Record<L, string>>, number]>,
): void {
  const seen = new Map<string, number>();
  new Counter({
    name: (metric.prefix ?? METRIC_PREFIX) + metric.name,
    help: metric.help,
    labelNames: metric.labelNames,
    registers: [registry],
    collect() {
      for (const [labels, count] of read()) {
        const key = JSON.stringify(labels);
        const before = seen.get(key) ?? 0;
        this.inc(labels, Math.max(0, count - before));
        seen.set(key, Math.max(count, before));
      }
    },
  });
}

/**
 * Exposes a core KubeTransport's request counts as `blockipam_api_requests_total{method}`,
 * read from `transport.stats` at scrape time (the transport counts; nothing is counted twice).
 */
export function observeTransport(registry: Registry, transport: KubeTransport): void {
  scrapedCounter(
    registry,
    {
      name: 'api_requests_total',
      help: 'API requests sent through the compare-and-swap datastore, by HTTP method',
      labelNames: ['method'],
    },
    () => Object.entries(transport.stats.byMethod).map(([method, count]) => [{ method }, count] as const),
  );
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
