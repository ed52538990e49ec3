/**
 * The pod-churn benchmark's report (test/bench/pod-churn/main.ts): the ratios of each IPAM's
 * median phase times with their min–max, where each run's time went (breakdown.ts), the charts
 * and the `## Pod churn on the real cluster` section of docs/benchmarks.md.
 */
import { barSpec, lineSpec, machineLine, writeChart } from '../charts/index.ts';
import { median } from '../cost-curves/common.ts';
import { writeDocSection } from '../doc-section.ts';
import { BREAKDOWN_METHOD, cpuTable, splitTable, type CallSplit, type PhaseCost } from './breakdown.ts';
import { CALICO_SETUP } from './calico.ts';
import type { InstallMode } from './install.ts';
import type { Ipam } from './network.ts';
import type { PhaseResult } from './phases.ts';

/** How the bench was run (its command line), for the report. */
export interface Options {
  readonly pods: number;
  readonly order: readonly Ipam[];
  readonly install: InstallMode;
  /** Each run on a cluster of its own. */
  readonly fresh: boolean;
  /** The 1-minute load average each run waits for. */
  readonly settledLoad: number;
}

/** One run of the bench: an IPAM on its cluster, its phases and where their time went. */
export interface Run {
  readonly ipam: Ipam;
  readonly label: string;
  readonly phases: readonly PhaseResult[];
  /** Per phase, in the order of `phases`: CPU per part, the agents' time (breakdown.ts). */
  readonly costs: readonly PhaseCost[];
  /** Per phase: blockipam's calls, whole against the agent's part (none for the other IPAMs). */
  readonly splits: readonly (readonly CallSplit[])[];
  readonly uptimeBefore: string;
  readonly uptimeAfter: string;
  readonly extra: string;
}

/** An IPAM's finished runs of a phase: median, min and max seconds, and how many. */
function spread(
  runs: readonly Run[],
  ipam: Ipam,
  phase: string,
): { median: number; min: number; max: number; n: number } | undefined {
  const xs = runs
    .filter((r) => r.ipam === ipam)
    .flatMap((r) => r.phases.filter((p) => p.phase === phase && p.done).map((p) => p.seconds));
  if (xs.length === 0) return undefined;
  return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs), n: xs.length };
}

/** The ratios of the IPAMs' medians per phase, each IPAM's median and min–max over its runs beside. */
export function ratioLine(runs: readonly Run[], o: Options): string {
  const ratios = (over: Ipam, under: Ipam): string =>
    (['create', 're-create', 'delete'] as const)
      .map((phase) => {
        const [a, b] = [spread(runs, over, phase), spread(runs, under, phase)];
        if (!a || !b) return `${phase} n/a`;
        const range = (x: typeof a): string =>
          `${x.median.toFixed(1)} s, ${x.min.toFixed(1)}–${x.max.toFixed(1)} over ${x.n} run${x.n > 1 ? 's' : ''}`;
        return `${phase} ${(a.median / b.median).toFixed(2)} (${over} ${range(a)}; ${under} ${range(b)})`;
      })
      .join(', ');
  return `Ratios of the medians blockipam / host-local, one invocation of the bench${o.fresh ? ' (each run on a cluster of its own)' : ' (one cluster)'}, each IPAM's median and min–max over its runs in brackets: ${ratios('blockipam', 'host-local')} (goal: create within 1.2×).${runs.some((r) => r.ipam === 'calico') ? ` Ratios calico / blockipam: ${ratios('calico', 'blockipam')}; calico / host-local: ${ratios('calico', 'host-local')}.` : ''}`;
}

/** Where each run's phases spent their time: the method, CPU per part, blockipam's calls split. */
export function breakdown(runs: readonly Run[]): string[] {
  return [BREAKDOWN_METHOD, cpuTable(runs), splitTable(runs)].filter(Boolean);
}

/** Draws the charts and rewrites the `## Pod churn on the real cluster` section of docs/benchmarks.md. */
export async function publish(
  runs: readonly Run[],
  ctx: { loadAtStart: number; maxPods: string; nodes: number; skipped: readonly string[] },
  o: Options,
): Promise<void> {
  const when = new Date().toISOString().slice(0, 16).replace('T', ' ');
  const versions =
    'Kubernetes v1.37.2 (kubelet, scheduler, controller-manager), containerd v2.4.2, runc 1.1.5, ptp/portmap/host-local v1.10.0';
  const subtitle = [
    `${when} UTC · ${machineLine(ctx.loadAtStart)}`,
    `${versions}`,
    `${o.pods} pause pods in 3 Deployments on ${ctx.nodes} nodes, sampled by one pod LIST per second`,
  ];
  const charts: string[] = [];
  for (const phase of ['create', 're-create'] as const)
    charts.push(
      await writeChart(
        `pod-churn-${phase}`,
        lineSpec({
          title: `Pods Running over time: ${phase === 'create' ? `${o.pods} pods created at once` : `all ${o.pods} pods deleted, re-created by their ReplicaSets`}`,
          subtitle,
          x: { title: 's since the first request' },
          y: { title: 'pods Running' },
          step: true,
          series: runs.map((r) => ({
            name: r.label,
            points: r.phases.find((p) => p.phase === phase)?.series ?? [[0, 0]],
          })),
        }),
      ),
    );
  charts.push(
    await writeChart(
      'pod-churn-phases',
      barSpec({
        title: 'Pod churn: wall time per phase',
        subtitle,
        categoryTitle: 'phase',
        y: { title: 'wall time (s)' },
        bars: runs.flatMap((r) => [
          ...r.phases.map((p) => ({
            category: p.phase,
            series: r.label,
            value: Math.round(p.seconds * 10) / 10,
          })),
          ...r.phases
            .filter((p) => p.releasedSeconds !== undefined)
            .map((p) => ({
              category: 'delete → addresses released',
              series: r.label,
              value: Math.round((p.releasedSeconds ?? 0) * 10) / 10,
            })),
        ]),
      }),
    ),
  );
  const s = (p: PhaseResult | undefined): string =>
    p ? `${p.seconds.toFixed(1)}${p.done ? '' : ' (not finished)'}` : '—';
  const rows = runs.map((r) => {
    const [create, recreate, del] = [r.phases[0], r.phases[1], r.phases[2]];
    return `| ${r.label} | ${s(create)} | ${s(recreate)} | ${s(del)} | ${del?.releasedSeconds?.toFixed(1) ?? 'not within 10 min'} | ${JSON.stringify(create?.perNode ?? {}).replace(/"/g, '')} | ${r.uptimeBefore.replace(/^.*load average: /, '')} → ${r.uptimeAfter.replace(/^.*load average: /, '')} |`;
  });
  await writeDocSection(
    '## Pod churn on the real cluster',
    [
      `Measured by \`node_modules/.bin/node test/bench/pod-churn/main.ts --pods ${o.pods} --order ${o.order.join(',')} --install ${o.install}${o.fresh ? '' : ' --shared-cluster'}\` on ${when} UTC: ${machineLine(ctx.loadAtStart)}; ${versions}.`,
      `Method (Spiderpool's, at this machine's scale): the harness's ${ctx.nodes}-node cluster (test/cluster/up.sh: per node kubelet + containerd + runc in its own namespaces; kubelet maxPods ${ctx.maxPods}, the default). For each run in turn (the order above), ${o.fresh ? 'on a cluster of its own, started for it and torn down after it (so nothing one run leaves behind reaches the next),' : 'in the same cluster,'} once the 1-minute load average is below ${o.settledLoad} (at most 10 min of waiting): 3 Deployments totalling ${o.pods} pause pods (imagePullPolicy Never, terminationGracePeriodSeconds 5) are created at once → seconds until all are Running; all pods are deleted at once (one DELETE collection, default grace) and their ReplicaSets re-create them → seconds until ${o.pods} replacements are Running; the Deployments are deleted → seconds until no pod is left, and until the IPAM holds no address. Times start at the phase's first request; progress is one pod LIST per second. The chain is ptp (MTU 1400) + portmap for host-local and blockipam; the conflist is switched between IPAMs (containerd reloads it). host-local: one /24 per node (the floor: files on the node, no API). blockipam: ${o.install === 'chart' ? `installed by the Helm chart for its run only (\`helm install\` with Helm 4, the image from scripts/build-image.sh imported into every node; test/bench/pod-churn/install.ts) and uninstalled after it, chart defaults but the harness's API address and CNI paths and \`cni.mtu=1400\` and \`plugin.logFile\` (the per-call figures below): pool default-ipv4 10.244.0.0/16 of /26 blocks, default IPAMConfig (minFreeAddressesPerNode 16), the agent DaemonSet (the plugin executable, its conflist and bound-token kubeconfig, the node's IPAM server, routes) and the controller Deployment (2 replicas) running during blockipam's run only` : `installed by \`test/cluster/install-blockipam.sh\`, pool 10.244.0.0/16 of /26 blocks, default IPAMConfig (minFreeAddressesPerNode 16), a node agent per node running as a host process during blockipam's run only (admin kubeconfig, no routes; the plugin on its direct path), plugin log level info`}. ${o.order.includes('calico') && !ctx.skipped.length ? `calico: ${CALICO_SETUP}. ` : ''}${ctx.skipped.join('; ')}${ctx.skipped.length ? '. ' : ''}The harness's CNI call recorder is bypassed (plugins linked directly).`,
      [
        '| run | create → all Running (s) | delete all → all re-created Running (s) | delete Deployments → no pod (s) | → no address held (s) | pods per node after create | load average (before → after) |',
        '| --- | --- | --- | --- | --- | --- | --- |',
        ...rows,
      ].join('\n'),
      ratioLine(runs, o),
      ...breakdown(runs),
      ...runs.filter((r) => r.extra).map((r) => `${r.label}: ${r.extra}.`),
      ...charts.map(
        (link, i) =>
          `![${['pods Running over time, create', 'pods Running over time, re-create', 'wall time per phase'][i]}](${link})`,
      ),
    ].join('\n\n'),
  );
}
