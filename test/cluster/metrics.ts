/**
 * The agents' and controllers' Prometheus endpoints on the test cluster, scraped directly (no
 * Prometheus here): both run on the host network (charts/blockipam: agent.metricsPort 9465,
 * controller.metricsPort 9094), so `curl` from the cluster namespace reaches them at their nodes'
 * addresses. The text format is parsed just enough to read samples by name and labels.
 */
import { cluster, inNode, kubectlOk } from '../helpers/cluster.ts';
import { NAMESPACE, RELEASE } from './chart.ts';

/** The chart's default metrics ports. */
export const AGENT_METRICS_PORT = 9465;
export const CONTROLLER_METRICS_PORT = 9094;

/** One sample: metric name, labels, value. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** The samples of a text-format exposition (comments and blank lines skipped). */
export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const m = LINE.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL))
      labels[l[1] ?? ''] = (l[2] ?? '').replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    samples.push({ name: m[1] ?? '', labels, value: Number(m[3]) });
  }
  return samples;
}

/**
 * GET http://`host`:`port`/metrics from the cluster namespace.
 * @throws Error with curl's output when the scrape fails
 */
export function scrape(host: string, port: number): Sample[] {
  const r = inNode('cluster', 'curl', ['-fsS', '--max-time', '10', `http://${host}:${port}/metrics`]);
  if (r.status !== 0) throw new Error(`scrape of ${host}:${port} failed (exit ${r.status}): ${r.stderr}`);
  return parseExposition(r.stdout);
}

/** Samples named `name` whose labels include every pair of `labels`. */
export function pick(
  samples: readonly Sample[],
  name: string,
  labels: Record<string, string> = {},
): Sample[] {
  return samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
}

/** The sum of {@link pick}'s values; undefined when there is no such sample. */
export function sum(
  samples: readonly Sample[],
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const found = pick(samples, name, labels);
  return found.length === 0 ? undefined : found.reduce((a, s) => a + s.value, 0);
}

/** Every node's agent, scraped: one exposition per node, in cluster().nodes order. */
export function scrapeAgents(): { node: string; samples: Sample[] }[] {
  const c = cluster();
  return c.nodes.map((node, i) => ({ node, samples: scrape(c.nodeIps[i] ?? '', AGENT_METRICS_PORT) }));
}

/**
 * The leading controller's samples: every controller pod of the release (host network: its
 * node's address) scraped, the one whose `blockipam_controller_leader` is 1 returned.
 * @returns undefined while no replica leads
 */
export function scrapeLeader(): Sample[] | undefined {
  const selector = `app.kubernetes.io/instance=${RELEASE},app.kubernetes.io/component=controller`;
  const hosts = kubectlOk([
    '-n',
    NAMESPACE,
    'get',
    'pods',
    '-l',
    selector,
    '-o',
    'jsonpath={range .items[*]}{.status.hostIP}{"\\n"}{end}',
  ])
    .split('\n')
    .filter(Boolean);
  for (const host of hosts) {
    let samples: Sample[];
    try {
      samples = scrape(host, CONTROLLER_METRICS_PORT);
    } catch {
      continue; // a replica starting or gone: the other may lead
    }
    if (sum(samples, 'blockipam_controller_leader') === 1) return samples;
  }
  return undefined;
}
