/**
 * The metric names blockipam exports, taken from the registrations themselves: the agent's and
 * the controller's registries built by the functions their processes call (shared counters and
 * process metrics, createAgentMetrics and every observe* of the agent, controllerMetrics), read
 * back from prom-client. A renamed metric changes this set, so the monitoring tests that check
 * the chart's alerts and dashboard against it fail (test/charts/monitoring.test.ts,
 * monitoring.int.test.ts). Also a PromQL reader that lists the metric names a query selects.
 */
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { KubeTransport } from 'blockipam/core/kube';
import * as agentModule from '../../block-controller/agent/metrics.ts';
import { controllerMetrics, observeControllerReady } from '../../block-controller/controller/metrics.ts';
import * as sharedModule from '../../block-controller/shared/metrics.ts';

/**
 * The observe* functions of the metrics modules this file calls (monitoring.test.ts checks no
 * other exists: a new one must be called here, or its metrics would escape the check).
 */
export const OBSERVERS_CALLED = [
  'observeAgentReady',
  'observeBatching',
  'observeConfirmLists',
  'observeTransport',
];
/** The modules metrics are registered in (monitoring.test.ts checks no other source file does). */
export const METRIC_MODULES = [
  'block-controller/agent/metrics.ts',
  'block-controller/controller/metrics.ts',
  'block-controller/shared/metrics.ts',
];
export const OBSERVER_EXPORTS = [
  ...Object.keys(agentModule).filter((k) => k.startsWith('observe')),
  ...Object.keys(sharedModule).filter((k) => k.startsWith('observe')),
];

/** Series names of a registry's metrics: a histogram's _bucket/_sum/_count, a summary's too. */
async function seriesNames(registry: Registry): Promise<string[]> {
  const metrics = await registry.getMetricsAsJSON();
  return metrics.flatMap((m) => {
    const type = String(m.type);
    if (type === 'histogram') return [`${m.name}_bucket`, `${m.name}_sum`, `${m.name}_count`];
    if (type === 'summary') return [m.name, `${m.name}_sum`, `${m.name}_count`];
    return [m.name];
  });
}

const noTransport = { stats: { requests: 0, byMethod: {} } } as unknown as KubeTransport;

/** The agent's and the controller's registries, built by the functions their processes call. */
function registries(): { agent: Registry; controller: Registry } {
  const agent = agentModule.createAgentMetrics();
  agentModule.observeBatching(agent, 'node-a', () => undefined);
  agentModule.observeConfirmLists(agent, 'node-a', () => 0);
  agentModule.observeAgentReady(agent, 'node-a', () => []);
  sharedModule.observeTransport(agent.registry, noTransport);
  const shared = sharedModule.createMetrics('controller');
  sharedModule.observeTransport(shared.registry, noTransport);
  controllerMetrics(shared.registry);
  observeControllerReady(shared.registry, () => []);
  return { agent: agent.registry, controller: shared.registry };
}

/** Every series name the agent and the controller export, by component. */
export async function exportedMetrics(): Promise<{ agent: Set<string>; controller: Set<string> }> {
  const { agent, controller } = registries();
  return { agent: new Set(await seriesNames(agent)), controller: new Set(await seriesNames(controller)) };
}

/**
 * The metric (family) names each component registers, as prom-client names them (a histogram once,
 * without _bucket), from the same registrations as {@link exportedMetrics}; `process` holds Node's
 * default process metrics under the prefix, which both export and docs/operations.md names only as
 * a group.
 */
export async function exportedFamilies(): Promise<{
  agent: Set<string>;
  controller: Set<string>;
  process: Set<string>;
}> {
  const { agent, controller } = registries();
  const defaults = new Registry();
  collectDefaultMetrics({ register: defaults, prefix: sharedModule.METRIC_PREFIX });
  const names = async (r: Registry) => new Set((await r.getMetricsAsJSON()).map((m) => m.name));
  return { agent: await names(agent), controller: await names(controller), process: await names(defaults) };
}

/** Series Prometheus itself writes for every scrape target (not exported by blockipam). */
export const PROMETHEUS_SERIES = new Set(['up']);

const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan', 'start', 'end']);

/**
 * The metric names a PromQL expression (or a Grafana variable query) selects, in order, without
 * repeats: label matchers, ranges, grouping clauses, strings, numbers, `$variables` and function
 * names are not names; `label_values(metric{…}, label)` names `metric` only.
 * @param expr a PromQL expression as Prometheus or Grafana reads it (Helm already rendered)
 */
export function metricNames(expr: string): string[] {
  const s = expr
    .replace(/label_values\(([^,)]*),[^)]*\)/g, ' $1 ')
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\b(?:group_left|group_right)\b/g, ' ')
    .replace(/\$\{?\w+\}?/g, ' ')
    .replace(/(?<![\w:.])\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w:])/g, ' ');
  const names = [...s.matchAll(/(?<![\w:])[A-Za-z_:][\w:]*(?![\w:])(?!\s*\()/g)].map((m) => m[0]);
  return [...new Set(names.filter((n) => !KEYWORDS.has(n.toLowerCase())))];
}
