/**
 * The chart's Grafana dashboard (charts/blockipam/dashboards/blockipam.json): valid JSON, unique
 * panel ids, a templated Prometheus data source on every panel and query, panels inside the
 * 24-column grid without overlap, and every metric every query names one the agent or the
 * controller exports (read from their registrations: test/charts/exported-metrics.ts), so a
 * renamed metric fails here. The alerts get the same check once rendered
 * (monitoring.int.test.ts). Also the PromQL name reader the checks rely on.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  exportedFamilies,
  exportedMetrics,
  METRIC_MODULES,
  metricNames,
  OBSERVER_EXPORTS,
  OBSERVERS_CALLED,
  PROMETHEUS_SERIES,
} from './exported-metrics.ts';

const REPO = join(import.meta.dirname, '..', '..');
const DASHBOARD = join(REPO, 'charts', 'blockipam', 'dashboards', 'blockipam.json');
const OPERATIONS = join(REPO, 'docs', 'operations.md');

/**
 * The metric names of each table under docs/operations.md §Metrics (### Controller, ### Agent,
 * ### Both): the first cell of each row, in backticks.
 */
function documentedMetrics(): Map<string, string[]> {
  const text = readFileSync(OPERATIONS, 'utf8');
  const section = text.slice(text.indexOf('\n## Metrics\n'), text.indexOf('\n## Alerts\n'));
  const tables = new Map<string, string[]>();
  let heading = '';
  for (const line of section.split('\n')) {
    const h = /^### (.+)$/.exec(line);
    if (h) heading = h[1] ?? '';
    const row = /^\| `(blockipam_\w+)`/.exec(line);
    if (row?.[1]) tables.set(heading, [...(tables.get(heading) ?? []), row[1]]);
  }
  return tables;
}

interface Target {
  expr: string;
  refId: string;
  datasource?: { type?: string; uid?: string };
}
interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { type?: string; uid?: string };
  gridPos: { x: number; y: number; w: number; h: number };
  targets?: Target[];
  panels?: Panel[];
}
interface Variable {
  name: string;
  type: string;
  query: string | { query: string };
  datasource?: { uid?: string };
}
interface Dashboard {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: Variable[] };
}

const dashboard = (): Dashboard => JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;
const allPanels = (d: Dashboard): Panel[] => d.panels.flatMap((p) => [p, ...(p.panels ?? [])]);

test('metricNames reads the metric names of a PromQL query', () => {
  const cases: [string, string[]][] = [
    // selectors, matchers and ranges
    ['rate(a_total{op="add",x=~"b|c"}[5m])', ['a_total']],
    // grouping clauses and functions are not names; `le` is a label
    ['histogram_quantile(0.99, sum by (node, le) (rate(h_bucket[$__rate_interval])))', ['h_bucket']],
    // binary operators with vector matching, keywords, numbers
    ['a > 10 and on (ippool) (b or on (ippool) 0 * c) < 0.5 * a', ['a', 'b', 'c']],
    ['max(x) < 1 unless sum(y) > 1e3', ['x', 'y']],
    // Grafana: variables, label_values names the metric only
    ['label_values(m{component="agent"}, job)', ['m']],
    ['up{job=~"$agent_job"} == 0', ['up']],
  ];
  for (const [expr, names] of cases) assert.deepEqual(metricNames(expr), names, expr);
});

test('every observe* of the metrics modules is called by the exported-names reader', () => {
  assert.deepEqual([...OBSERVER_EXPORTS].sort(), [...OBSERVERS_CALLED].sort());
});

test('metrics are registered only in the modules the exported-names reader builds', () => {
  const found: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(REPO, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (
        entry.name.endsWith('.ts') &&
        /new (?:Counter|Gauge|Histogram|Summary)\(/.test(readFileSync(join(REPO, path), 'utf8'))
      )
        found.push(path);
    }
  };
  for (const part of ['core', 'ipam-plugin', 'block-controller', 'cli', 'cmd']) walk(part);
  assert.deepEqual(found.sort(), [...METRIC_MODULES].sort());
});

test('the dashboard is valid JSON with unique panel ids, in the grid, without overlap', () => {
  const d = dashboard();
  assert.equal(d.uid, 'blockipam');
  const panels = allPanels(d);
  const ids = panels.map((p) => p.id);
  assert.equal(new Set(ids).size, ids.length, `duplicate panel ids: ${ids.join(',')}`);
  for (const p of panels) {
    const { x, y, w, h } = p.gridPos;
    assert.ok(
      x >= 0 && w > 0 && h > 0 && y >= 0 && x + w <= 24,
      `${p.title}: gridPos ${JSON.stringify(p.gridPos)}`,
    );
  }
  for (const [i, a] of panels.entries())
    for (const b of panels.slice(i + 1)) {
      const [p, q] = [a.gridPos, b.gridPos];
      const overlap = p.x < q.x + q.w && q.x < p.x + p.w && p.y < q.y + q.h && q.y < p.y + p.h;
      assert.ok(!overlap, `${a.title} overlaps ${b.title}`);
    }
});

test('every panel and query uses the templated Prometheus data source', () => {
  const d = dashboard();
  const source = d.templating.list.find((v) => v.name === 'datasource');
  assert.ok(source, 'no datasource variable');
  assert.equal(source.type, 'datasource');
  assert.equal(source.query, 'prometheus');
  const templated = { type: 'prometheus', uid: '${datasource}' };
  for (const p of allPanels(d).filter((p) => p.type !== 'row')) {
    assert.deepEqual(p.datasource, templated, p.title);
    assert.ok((p.targets ?? []).length > 0, `${p.title} has no query`);
    for (const t of p.targets ?? []) assert.deepEqual(t.datasource, templated, `${p.title} ${t.refId}`);
  }
  for (const v of d.templating.list.filter((v) => v.type === 'query'))
    assert.equal(v.datasource?.uid, '${datasource}', v.name);
});

test('every metric a dashboard query or variable names is one blockipam exports', async () => {
  const { agent, controller } = await exportedMetrics();
  const known = new Set([...agent, ...controller, ...PROMETHEUS_SERIES]);
  const d = dashboard();
  const queries = [
    ...allPanels(d).flatMap((p) => (p.targets ?? []).map((t) => [`${p.title} ${t.refId}`, t.expr])),
    ...d.templating.list
      .filter((v) => v.type === 'query')
      .map((v) => [`variable ${v.name}`, typeof v.query === 'string' ? v.query : v.query.query]),
  ];
  assert.ok(queries.length > 20, `only ${queries.length} queries`);
  for (const [where, expr = ''] of queries) {
    const names = metricNames(expr);
    assert.ok(names.length > 0, `${where} names no metric: ${expr}`);
    for (const name of names) assert.ok(known.has(name), `${where}: ${name} is not exported (${expr})`);
  }
});

test('the exported names hold what the dashboard and alerts are built on', async () => {
  // the reader must see the registrations, or the checks above would pass on an empty set
  const { agent, controller } = await exportedMetrics();
  for (const name of [
    'blockipam_agent_ipam_requests_total',
    'blockipam_agent_ipam_request_duration_seconds_bucket',
    'blockipam_agent_block_updates_total',
    'blockipam_watch_restarts_total',
    'blockipam_process_start_time_seconds',
  ])
    assert.ok(agent.has(name), name);
  for (const name of [
    'blockipam_ipam_ippool_condition',
    'blockipam_controller_leader',
    'blockipam_api_requests_total',
  ])
    assert.ok(controller.has(name), name);
});

test("docs/operations.md lists every exported metric in its component's table, and nothing else", async () => {
  const { agent, controller, process } = await exportedFamilies();
  const docs = documentedMetrics();
  const own = (names: Set<string>) => [...names].filter((n) => !process.has(n));
  const want = {
    Controller: own(controller).filter((n) => !agent.has(n)),
    Agent: own(agent).filter((n) => !controller.has(n)),
    Both: own(agent).filter((n) => controller.has(n)),
  };
  assert.deepEqual([...docs.keys()].sort(), Object.keys(want).sort(), 'the tables');
  for (const [table, names] of Object.entries(want)) {
    const listed = docs.get(table) ?? [];
    assert.equal(new Set(listed).size, listed.length, `${table}: a metric listed twice`);
    assert.deepEqual(
      {
        missing: names.filter((n) => !listed.includes(n)),
        notExported: listed.filter((n) => !names.includes(n)),
      },
      { missing: [], notExported: [] },
      `docs/operations.md ### ${table}`,
    );
  }
  // nor does any other line of it (runbooks, queries) name one that is not exported
  const series = await exportedMetrics();
  const known = new Set([...agent, ...controller, ...process, ...series.agent, ...series.controller]);
  const named = readFileSync(OPERATIONS, 'utf8').match(/\bblockipam_[a-z_]*[a-z]\b/g) ?? [];
  assert.deepEqual(
    [...new Set(named.filter((n) => !known.has(n)))],
    [],
    'named in docs/operations.md, not exported',
  );
  // the reader must see the rows, or the check would pass on empty tables
  assert.ok((docs.get('Agent') ?? []).length > 10 && (docs.get('Controller') ?? []).length > 10);
});
