/**
 * The chart's monitoring objects with Helm 3 and 4: the PrometheusRule (rendered when asked, or
 * by default when the cluster serves the PrometheusRule API) and the Grafana dashboard
 * ConfigMap, on and off; the schema's refusals naming each bad value; and the rules themselves
 * through promtool (built by test/tools/build-promtool.sh): `promtool check rules`, then
 * `promtool test rules` on test/charts/prometheus-rules.test.yaml, where every alert fires on
 * its recorded series and stays silent on the healthy ones. Every metric an alert names is one
 * the agent or controller exports (test/charts/exported-metrics.ts), and every runbook_url
 * points at a section of docs/operations.md. The dashboard ConfigMap passes the real API server's
 * server-side dry-run (the PrometheusRule's CRD is not installed there: promtool checks the rules).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { parse, stringify } from 'yaml';
import { slugOf } from '../../scripts/docs-lint.ts';
import { kubectl } from '../helpers/control-plane.ts';
import { requireIntegrationTier } from '../helpers/tier.ts';
import { exportedMetrics, metricNames, PROMETHEUS_SERIES } from './exported-metrics.ts';
import { CHART, REPO, find, helm, render, templateArgs } from './helm.ts';
import type { HelmMajor, Rendered } from './helm.ts';

const PROMETHEUS_RULE_API = ['--api-versions', 'monitoring.coreos.com/v1/PrometheusRule'];
const RULE_TESTS = join(REPO, 'test', 'charts', 'prometheus-rules.test.yaml');
const OPERATIONS = join(REPO, 'docs', 'operations.md');

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}
interface RuleGroup {
  name: string;
  interval?: string;
  rules: Rule[];
}
const groupsOf = (o: Rendered): RuleGroup[] => (o.spec as { groups: RuleGroup[] }).groups;

const scratch = mkdtempSync(join(tmpdir(), 'monitoring-test-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

let promtoolPath: string | undefined;
/** promtool, built first if the cache lacks it. @throws Error with the build's stderr */
function promtool(args: readonly string[], cwd: string): { status: number; out: string } {
  requireIntegrationTier('promtool (built outside the repo)');
  if (!promtoolPath) {
    const r = spawnSync('bash', [join(REPO, 'test', 'tools', 'build-promtool.sh')], { encoding: 'utf8' });
    const line = r.stdout.split('\n').find((l) => l.startsWith('PROMTOOL='));
    if (r.status !== 0 || !line)
      throw new Error(`build-promtool.sh failed (${r.status}): ${r.stderr.slice(-2000)}`);
    promtoolPath = line.slice('PROMTOOL='.length);
  }
  const r = spawnSync(promtoolPath, args, { cwd, encoding: 'utf8' });
  return { status: r.status ?? -1, out: `${r.stdout}${r.stderr}` };
}

for (const major of [3, 4] as const satisfies readonly HelmMajor[]) {
  describe(`chart monitoring with Helm ${major}`, () => {
    const kinds = (args: string[]): string[] =>
      render(major, ['blockipam', ...args])
        .filter(
          (o) =>
            o.kind === 'PrometheusRule' || (o.kind === 'ConfigMap' && o.metadata.name.endsWith('-dashboard')),
        )
        .map((o) => o.kind);

    test('the PrometheusRule: by default only where the cluster serves its API; true and false as asked', () => {
      assert.deepEqual(kinds([]), []);
      assert.deepEqual(kinds(PROMETHEUS_RULE_API), ['PrometheusRule']);
      assert.deepEqual(
        kinds([...PROMETHEUS_RULE_API, '--set', 'monitoring.prometheusRule.enabled=false']),
        [],
      );
      assert.deepEqual(kinds(['--set', 'monitoring.prometheusRule.enabled=true']), ['PrometheusRule']);
    });

    test('the PrometheusRule takes its namespace, labels, interval, runbook base and jobs from the values', () => {
      const rule = find(
        render(major, [
          'blockipam',
          '--set',
          'monitoring.prometheusRule.enabled=true,monitoring.prometheusRule.namespace=monitoring',
          '--set',
          'monitoring.prometheusRule.labels.release=kube-prometheus-stack,monitoring.prometheusRule.interval=1m',
          '--set',
          'monitoring.prometheusRule.runbookBaseUrl=https://docs.example/ops.md',
          '--set',
          'monitoring.prometheusRule.agentJob=cni-agents,monitoring.prometheusRule.controllerJob=ipam-ctl',
        ]),
        'PrometheusRule',
        'blockipam',
      );
      assert.equal(rule.metadata.namespace, 'monitoring');
      assert.equal(rule.metadata.labels?.release, 'kube-prometheus-stack');
      assert.equal(rule.metadata.labels?.['app.kubernetes.io/instance'], 'blockipam');
      const groups = groupsOf(rule);
      for (const g of groups) assert.equal(g.interval, '1m', g.name);
      const rules = groups.flatMap((g) => g.rules);
      for (const r of rules)
        assert.match(r.annotations.runbook_url ?? '', /^https:\/\/docs\.example\/ops\.md#[a-z]+$/);
      const expr = (name: string): string => rules.find((r) => r.alert === name)?.expr ?? '';
      assert.match(expr('BlockipamAgentDown'), /up\{job="cni-agents"\} == 0/);
      assert.match(expr('BlockipamControllerDown'), /up\{job="ipam-ctl"\} == 0/);
      // defaults: the release namespace, the metrics Services' names as jobs, no interval
      const plain = find(render(major, ['blockipam', ...PROMETHEUS_RULE_API]), 'PrometheusRule', 'blockipam');
      assert.equal(plain.metadata.namespace, 'kube-system');
      assert.ok(groupsOf(plain).every((g) => g.interval === undefined));
      assert.match(
        groupsOf(plain)
          .flatMap((g) => g.rules)
          .find((r) => r.alert === 'BlockipamAgentDown')?.expr ?? '',
        /up\{job="blockipam-agent-metrics"\}/,
      );
    });

    test('the dashboard ConfigMap: off by default; on, the JSON whole, labelled for the Grafana sidecar', () => {
      assert.deepEqual(kinds([]), []);
      const dashboard = JSON.parse(
        readFileSync(join(CHART, 'dashboards', 'blockipam.json'), 'utf8'),
      ) as unknown;
      const on = find(
        render(major, ['blockipam', '--set', 'monitoring.grafanaDashboard.enabled=true']),
        'ConfigMap',
        'blockipam-dashboard',
      );
      assert.equal(on.metadata.namespace, 'kube-system');
      assert.equal(on.metadata.labels?.grafana_dashboard, '1');
      const data = (on as unknown as { data: Record<string, string> }).data;
      assert.deepEqual(JSON.parse(data['blockipam.json'] ?? ''), dashboard);
      // a values file: Helm merges maps, so the default label goes only when set to null
      const values = join(scratch, `dashboard-${major}.yaml`);
      writeFileSync(
        values,
        stringify({
          monitoring: {
            grafanaDashboard: {
              enabled: true,
              namespace: 'grafana',
              labels: { grafana_dashboard: null, dashboards: 'blockipam' },
              annotations: { grafana_folder: 'Networking' },
            },
          },
        }),
      );
      const custom = find(render(major, ['blockipam', '-f', values]), 'ConfigMap', 'blockipam-dashboard');
      assert.equal(custom.metadata.namespace, 'grafana');
      assert.equal(custom.metadata.labels?.dashboards, 'blockipam');
      assert.equal(custom.metadata.labels?.grafana_dashboard, undefined);
      assert.equal(custom.metadata.annotations?.grafana_folder, 'Networking');
    });

    test('the API server accepts the dashboard ConfigMap (server-side dry-run)', () => {
      const r = helm(major, [
        ...templateArgs(['blockipam', '--set', 'monitoring.grafanaDashboard.enabled=true']),
        '--show-only',
        'templates/grafana-dashboard.yaml',
      ]);
      assert.equal(r.status, 0, r.stderr);
      const apply = kubectl(
        ['apply', '--server-side', '--dry-run=server', '--field-manager=helm', '-f', '-'],
        {
          input: r.stdout,
        },
      );
      assert.equal(apply.status, 0, apply.stderr);
      assert.match(apply.stdout, /configmap\/blockipam-dashboard serverside-applied \(server dry run\)/);
    });

    test('helm lint --strict passes with the rule and the dashboard on', () => {
      const r = helm(major, [
        'lint',
        '--strict',
        CHART,
        '--set',
        'monitoring.prometheusRule.enabled=true,monitoring.grafanaDashboard.enabled=true',
      ]);
      assert.equal(r.status, 0, r.stdout + r.stderr);
    });

    test('values.schema.json refuses bad monitoring values, naming each', () => {
      const cases: [string[], RegExp][] = [
        [['--set', 'monitoring.prometheusRule.enabled=maybe'], /\/monitoring\/prometheusRule\/enabled/],
        [
          ['--set', 'monitoring.prometheusRule.namespace=Monitoring'],
          /\/monitoring\/prometheusRule\/namespace/,
        ],
        [['--set', 'monitoring.prometheusRule.interval=1 minute'], /\/monitoring\/prometheusRule\/interval/],
        [
          ['--set', 'monitoring.prometheusRule.runbookBaseUrl='],
          /\/monitoring\/prometheusRule\/runbookBaseUrl/,
        ],
        [
          ['--set', 'monitoring.prometheusRule.runbookBaseUrl=https://x/ops.md#alerts'],
          /\/monitoring\/prometheusRule\/runbookBaseUrl/,
        ],
        [['--set', 'monitoring.prometheusRule.agentJob=a"b'], /\/monitoring\/prometheusRule\/agentJob/],
        [
          ['--set', 'monitoring.prometheusRule.labels.team=a b'],
          /\/monitoring\/prometheusRule\/labels\/team/,
        ],
        [['--set', 'monitoring.prometheusRule.colour=red'], /additional properties 'colour' not allowed/],
        [['--set', 'monitoring.grafanaDashboard.enabled=auto'], /\/monitoring\/grafanaDashboard\/enabled/],
        [['--set', 'monitoring.grafanaDashboard.namespace=-x'], /\/monitoring\/grafanaDashboard\/namespace/],
        [
          ['--set', 'monitoring.grafanaDashboard.labels.grafana_dashboard=1'],
          /\/monitoring\/grafanaDashboard\/labels\/grafana_dashboard/,
        ],
        [
          ['--set', 'monitoring.grafanaDashboard.annotations.a=1'],
          /\/monitoring\/grafanaDashboard\/annotations\/a/,
        ],
      ];
      for (const [args, message] of cases) {
        const r = helm(major, templateArgs(['blockipam', ...args]));
        assert.notEqual(r.status, 0, `${args.join(' ')} was accepted`);
        assert.match(r.stderr, message, args.join(' '));
      }
    });
  });
}

describe('the alerts (rendered with Helm 4, checked by promtool)', () => {
  const rendered = (): RuleGroup[] =>
    groupsOf(find(render(4, ['blockipam', ...PROMETHEUS_RULE_API]), 'PrometheusRule', 'blockipam'));
  const alerts = (): Rule[] => rendered().flatMap((g) => g.rules);

  test('promtool check rules accepts the rendered groups; promtool test rules passes on the recorded series', () => {
    const dir = mkdtempSync(join(scratch, 'rules-'));
    writeFileSync(join(dir, 'rules.yaml'), stringify({ groups: rendered() }));
    copyFileSync(RULE_TESTS, join(dir, 'tests.yaml'));
    const check = promtool(['check', 'rules', 'rules.yaml'], dir);
    assert.equal(check.status, 0, check.out);
    assert.match(check.out, /SUCCESS: 12 rules found/);
    const run = promtool(['test', 'rules', 'tests.yaml'], dir);
    assert.equal(run.status, 0, run.out);
    assert.match(run.out, /SUCCESS/);
  });

  test('every alert has a case where it fires and one where it stays silent', () => {
    interface Case {
      alertname: string;
      exp_alerts?: unknown[];
    }
    const tests = (parse(readFileSync(RULE_TESTS, 'utf8')) as { tests: { alert_rule_test: Case[] }[] }).tests;
    const cases = tests.flatMap((t) => t.alert_rule_test);
    for (const { alert } of alerts()) {
      const mine = cases.filter((c) => c.alertname === alert);
      assert.ok(
        mine.some((c) => (c.exp_alerts ?? []).length > 0),
        `${alert} never fires in the tests`,
      );
      assert.ok(
        mine.some((c) => (c.exp_alerts ?? []).length === 0),
        `${alert} is never shown silent`,
      );
    }
    // and the tests name no alert the chart lacks
    const names = new Set(alerts().map((a) => a.alert));
    for (const c of cases) assert.ok(names.has(c.alertname), `tests name ${c.alertname}`);
  });

  test('each alert: severity, summary and description naming its pool or node, a runbook section', () => {
    const docs = readFileSync(OPERATIONS, 'utf8');
    const headings = new Set([...docs.matchAll(/^#{2,4} (.+)$/gm)].map((m) => slugOf(m[1] ?? '')));
    for (const group of rendered())
      for (const r of group.rules) {
        assert.match(r.labels.severity ?? '', /^(warning|critical)$/, r.alert);
        const { summary = '', description = '', runbook_url: url = '' } = r.annotations;
        assert.ok(summary && description, `${r.alert}: summary and description`);
        if (group.name !== 'blockipam.controller')
          for (const text of [summary, description])
            assert.match(
              text,
              /\{\{ \$labels\.(ippool|node) \}\}/,
              `${r.alert} names no pool or node: ${text}`,
            );
        const [base, anchor = ''] = url.split('#');
        assert.equal(base, 'docs/operations.md', r.alert);
        assert.equal(anchor, slugOf(r.alert), r.alert);
        assert.ok(headings.has(anchor), `${r.alert}: docs/operations.md has no section #${anchor}`);
      }
  });

  test('every metric an alert names is one blockipam exports (or Prometheus’ up)', async () => {
    const { agent, controller } = await exportedMetrics();
    const known = new Set([...agent, ...controller, ...PROMETHEUS_SERIES]);
    for (const r of alerts()) {
      const names = metricNames(r.expr);
      assert.ok(names.length > 0, `${r.alert} names no metric`);
      for (const name of names) assert.ok(known.has(name), `${r.alert}: ${name} is not exported`);
    }
  });
});
