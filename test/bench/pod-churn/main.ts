/**
 * Pod churn on the real test cluster (issue 13 item 3; a script, not a test): the Spiderpool
 * method at this machine's scale. On the harness's 3 nodes (test/cluster/up.sh: kubelet +
 * containerd + runc each), for each run of `--order` in turn, each on a cluster of its own (up.sh
 * before it, down.sh after it; `--shared-cluster`: all in one) — host-local with a range
 * per node (the floor: no API at all), blockipam, and Calico's own CNI plugin with calico-ipam
 * (without calico-node; calico.ts says what it needs) — Deployments totalling --pods pause pods are
 * created at once (time until all Running), every pod is deleted at once and re-created by its
 * ReplicaSet (time until all replacements are Running), the Deployments are deleted (time until
 * no pod is left, and until the IPAM holds no address). The conflist is switched between IPAMs.
 *
 *   node_modules/.bin/node test/bench/pod-churn/main.ts [--pods 300]
 *     [--order host-local,blockipam,calico] [--install chart|script] [--calico-api PATH] [--no-docs]
 *     [--shared-cluster]
 *
 * An IPAM may appear more than once in `--order` (`host-local,blockipam,blockipam,host-local`
 * alternates which goes first): the ratios are then of each IPAM's median, and each blockipam
 * run is also set against the host-local run beside it.
 *
 * calico is skipped, saying so, when it is not built and the projectcalico/api source
 * (`--calico-api`, default peer-ipams.ts DEFAULT_CALICO_API) is absent.
 *
 * blockipam is installed for its own run only (install.ts): by default by the Helm chart (`--install
 * chart`: the image in every node, the agent DaemonSet and the controller Deployment), or by
 * test/cluster/install-blockipam.sh with a node agent per node as a host process (`--install
 * script`, the set-up of the runs before the chart). Charts: pods Running over time
 * per IPAM and phase, and wall time per phase; the `## Pod churn on the real cluster` section of
 * docs/benchmarks.md is rewritten.
 */
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { barSpec, lineSpec, machineLine, writeChart } from '../charts/index.ts';
import { writeDocSection } from '../doc-section.ts';
import { cluster, kubectl, startOwnCluster, type Cluster } from '../../helpers/cluster.ts';
import { installBlockipam } from '../../cluster/blockipam.ts';
import { repoRoot } from '../../plugin/helpers/plugin-exe.ts';
import { installBlockipamFor, pluginLogFigures, type InstallMode, type Installed } from './install.ts';
import { bypassRecorder, hostLocalHeld, useIpam } from './network.ts';
import type { Ipam } from './network.ts';
import { Churn } from './phases.ts';
import {
  CALICO_SETUP,
  calicoBlocks,
  calicoHeld,
  calicoLogFigures,
  cleanCalico,
  prepareCalico,
} from './calico.ts';
import { buildCalico, DEFAULT_CALICO_API } from '../peer-ipams.ts';
import type { PhaseResult } from './phases.ts';

const { values } = parseArgs({
  options: {
    pods: { type: 'string', default: '300' },
    order: { type: 'string', default: 'host-local,blockipam,calico' },
    'calico-api': { type: 'string', default: DEFAULT_CALICO_API },
    install: { type: 'string', default: 'chart' },
    'no-docs': { type: 'boolean', default: false },
    'shared-cluster': { type: 'boolean', default: false },
  },
});
const INSTALL: InstallMode = ((mode: string): InstallMode => {
  if (mode !== 'chart' && mode !== 'script')
    throw new RangeError(`--install: "${mode}" is neither chart nor script`);
  return mode;
})(values.install ?? 'chart');
const PODS = Number(values.pods);
if (!Number.isInteger(PODS) || PODS < 1)
  throw new RangeError(`--pods: "${values.pods}" is not an integer ≥ 1`);
/** Each run on a cluster of its own (default), or all in one (`--shared-cluster`). */
const FRESH = !values['shared-cluster'];
const ORDER = (values.order ?? '').split(',').map((name): Ipam => {
  if (name !== 'blockipam' && name !== 'host-local' && name !== 'calico')
    throw new RangeError(`--order: unknown IPAM "${name}"`);
  return name;
});

const uptime = (): string => spawnSync('uptime', { encoding: 'utf8' }).stdout.trim();
const log = (text: string): void => void process.stderr.write(`${new Date().toISOString()} ${text}\n`);

interface Run {
  readonly ipam: Ipam;
  readonly label: string;
  readonly phases: readonly PhaseResult[];
  readonly uptimeBefore: string;
  readonly uptimeAfter: string;
  readonly extra: string;
}

/** The 1-minute load average each IPAM's run waits for before it starts (both start idle). */
const SETTLED_LOAD = 4;

/**
 * Waits until the machine has settled after the previous run (its delete phase leaves a load of
 * ~50 behind on 2 cores), at most 10 min; @returns the 1-minute load average it starts at.
 */
async function settle(): Promise<number> {
  const deadline = Date.now() + 10 * 60_000;
  while ((loadavg()[0] ?? 0) > SETTLED_LOAD && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 5000));
  return loadavg()[0] ?? 0;
}

function waitReady(nodes: readonly string[]): void {
  for (const node of nodes) {
    const r = kubectl(['wait', '--for', 'condition=Ready', '--timeout', '120s', `node/${node}`]);
    if (r.status !== 0) throw new Error(`${node} not Ready: ${r.stderr}`);
  }
}

async function runOne(ipam: Ipam, index: number, installed: Installed | undefined): Promise<Run> {
  const c = cluster();
  if (ipam !== 'blockipam' || INSTALL === 'script') useIpam(c, ipam); // else: the chart's agents wrote it
  await new Promise((resolve) => setTimeout(resolve, 3000)); // containerd reloads net.d
  waitReady(c.nodes);
  const churn = new Churn(c, { namespace: `churn-${index}-${ipam}`, pods: PODS });
  const uptimeBefore = uptime();
  log(`${ipam}: ${uptimeBefore}`);
  try {
    await churn.createNamespace();
    const phases: PhaseResult[] = [];
    const stuck: string[] = [];
    const noteStuck = async (): Promise<void> => {
      const last = phases.at(-1);
      if (last === undefined || last.done) return;
      const why = await churn.diagnose().catch((error: unknown) => `diagnosis failed: ${String(error)}`);
      log(`${ipam}: ${last.phase} not finished after ${last.seconds.toFixed(0)} s — ${why}`);
      stuck.push(`${last.phase} not finished after ${last.seconds.toFixed(0)} s: ${why}`);
    };
    phases.push(await churn.create());
    await noteStuck();
    log(`${ipam}: create ${phases.at(-1)?.seconds.toFixed(1)} s ${JSON.stringify(phases.at(-1)?.perNode)}`);
    const blocksAfterCreate =
      ipam === 'blockipam' ? await churn.blockipamBlocks() : ipam === 'calico' ? { all: calicoBlocks() } : {};
    phases.push(await churn.recreate());
    log(`${ipam}: re-create ${phases.at(-1)?.seconds.toFixed(1)} s`);
    await noteStuck();
    phases.push(
      await churn.delete(
        ipam === 'blockipam'
          ? () => churn.blockipamHeld()
          : ipam === 'calico'
            ? () => calicoHeld()
            : () => hostLocalHeld(c),
      ),
    );
    log(`${ipam}: delete ${phases.at(-1)?.seconds.toFixed(1)} s, released ${phases.at(-1)?.releasedSeconds}`);
    const extra = [
      ...(ipam === 'blockipam'
        ? [`blocks per node after create: ${JSON.stringify(blocksAfterCreate)}; ${installed?.describe ?? ''}`]
        : []),
      ...(ipam === 'calico'
        ? [`IPAMBlocks after create: ${blocksAfterCreate.all ?? 0}; ${installed?.describe ?? ''}`]
        : []),
      ...stuck,
      ...phases.flatMap((p) => (p.note ? [`${p.phase}: ${p.note}`] : [])),
      ...(ipam === 'blockipam' ? [pluginLogFigures(c)].filter(Boolean) : []),
      ...(ipam === 'calico' ? [calicoLogFigures(c)].filter(Boolean) : []),
      `at the end of the run: ${await churn.diagnose().catch((error: unknown) => `diagnosis failed: ${String(error)}`)}`,
    ].join('; ');
    return { ipam, label: `${ipam} (run ${index + 1})`, phases, uptimeBefore, uptimeAfter: uptime(), extra };
  } finally {
    churn.close();
  }
}

/** Readies a cluster for the runs: blockipam's script install, the CNI recorder bypassed. */
function prepareCluster(c: Cluster): void {
  log(`cluster ${c.runDir} up (${c.startupSeconds} s); blockipam is installed by ${INSTALL}`);
  if (INSTALL === 'script') installBlockipam();
  bypassRecorder(c, { blockipam: INSTALL === 'script' });
}

async function main(): Promise<void> {
  const loadAtStart = loadavg()[0] ?? 0;
  if (!FRESH) prepareCluster(cluster());
  let maxPods: string | undefined;
  let nodes = 0;
  const runs: Run[] = [];
  const skipped: string[] = [];
  for (const [i, ipam] of ORDER.entries()) {
    // A cluster per run (the default): nothing a run leaves behind — sandboxes still being torn
    // down, a kubelet's back-offs, blocks or files of the IPAM before — reaches the next one.
    if (ipam === 'calico' && buildCalico(values['calico-api'] ?? DEFAULT_CALICO_API) === undefined) {
      skipped.push(
        `calico skipped: not built here and the projectcalico/api source ${values['calico-api']} is absent`,
      );
      continue;
    }
    let own: ReturnType<typeof startOwnCluster> | undefined;
    try {
      own = FRESH ? startOwnCluster() : undefined;
    } catch (error) {
      skipped.push(`run ${i + 1} (${ipam}) skipped: its cluster did not start (${String(error)})`);
      continue;
    }
    try {
      const c = own?.cluster ?? cluster();
      if (own) prepareCluster(c);
      maxPods ??= kubectl(['get', 'node', c.nodes[0] ?? '', '-o', 'jsonpath={.status.capacity.pods}']).stdout;
      nodes = c.nodes.length;
      // built before the load settles: the build is ~6 min of CPU when not cached
      const calico =
        ipam === 'calico' ? prepareCalico(c, values['calico-api'] ?? DEFAULT_CALICO_API) : undefined;
      if (ipam === 'calico' && calico === undefined) {
        skipped.push(
          `calico skipped: not built here and the projectcalico/api source ${values['calico-api']} is absent`,
        );
        continue;
      }
      // the first too: a run started right after another (or the cluster's start) would inherit its load
      log(`run ${i + 1}: the load settled at ${(await settle()).toFixed(1)}`);
      // blockipam's daemons run only during its own run: none of their CPU is in host-local's
      const installed =
        ipam === 'blockipam'
          ? await installBlockipamFor(INSTALL, c, repoRoot, log)
          : calico !== undefined
            ? { describe: calico, stop: (): Promise<void> => Promise.resolve(cleanCalico(c)) }
            : undefined;
      try {
        runs.push(await runOne(ipam, i, installed));
      } finally {
        await installed?.stop();
      }
    } finally {
      if (own && !own.stop()) log(`run ${i + 1}: the cluster's teardown reported a failed host check`);
    }
  }
  const summary = runs.map((r) => ({
    label: r.label,
    phases: Object.fromEntries(
      r.phases.map((p) => [p.phase, { s: p.seconds, done: p.done, released: p.releasedSeconds }]),
    ),
    uptimeBefore: r.uptimeBefore,
    uptimeAfter: r.uptimeAfter,
  }));
  console.log(JSON.stringify(summary));
  for (const line of skipped) log(line);
  if (runs.length === 0) {
    log('no run finished: nothing is published');
    process.exitCode = 1;
    return;
  }
  if (!values['no-docs']) await publish(runs, { loadAtStart, maxPods: maxPods ?? '?', nodes, skipped });
}

async function publish(
  runs: readonly Run[],
  ctx: { loadAtStart: number; maxPods: string; nodes: number; skipped: readonly string[] },
): Promise<void> {
  const when = new Date().toISOString().slice(0, 16).replace('T', ' ');
  const versions =
    'Kubernetes v1.37.2 (kubelet, scheduler, controller-manager), containerd v2.4.2, runc 1.1.5, ptp/portmap/host-local v1.10.0';
  const subtitle = [
    `${when} UTC · ${machineLine(ctx.loadAtStart)}`,
    `${versions}`,
    `${PODS} pause pods in 3 Deployments on ${ctx.nodes} nodes, sampled by one pod LIST per second`,
  ];
  const charts: string[] = [];
  for (const phase of ['create', 're-create'] as const)
    charts.push(
      await writeChart(
        `pod-churn-${phase}`,
        lineSpec({
          title: `Pods Running over time: ${phase === 'create' ? `${PODS} pods created at once` : `all ${PODS} pods deleted, re-created by their ReplicaSets`}`,
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
  /** The median of an IPAM's runs for a phase (of finished phases only). */
  const median = (ipam: Ipam, phase: string): number | undefined => {
    const xs = runs
      .filter((r) => r.ipam === ipam)
      .map((r) => r.phases.find((p) => p.phase === phase))
      .filter((p) => p?.done)
      .map((p) => p?.seconds ?? 0)
      .sort((a, b) => a - b);
    if (xs.length === 0) return undefined;
    const mid = Math.floor(xs.length / 2);
    return xs.length % 2 ? xs[mid] : ((xs[mid - 1] ?? 0) + (xs[mid] ?? 0)) / 2;
  };
  const count = (ipam: Ipam): number => runs.filter((r) => r.ipam === ipam).length;
  const ratios = (over: Ipam, under: Ipam): string =>
    (['create', 're-create', 'delete'] as const)
      .map((phase) => {
        const a = median(over, phase);
        const b = median(under, phase);
        return a && b ? `${phase} ${(a / b).toFixed(2)}` : `${phase} n/a`;
      })
      .join(', ') +
    (count(over) > 1 || count(under) > 1 ? ` (medians of ${count(over)} and ${count(under)} runs)` : '');
  /** Each blockipam run against the host-local run next to it in the order (before or after). */
  const pairs = runs
    .map((r, i) => {
      if (r.ipam !== 'blockipam') return undefined;
      const peer = [runs[i - 1], runs[i + 1]].find((p) => p?.ipam === 'host-local');
      if (!peer) return undefined;
      const at = (run: Run, phase: string): number | undefined =>
        run.phases.find((p) => p.phase === phase && p.done)?.seconds;
      const text = (['create', 're-create', 'delete'] as const)
        .map((phase) => {
          const a = at(r, phase);
          const b = at(peer, phase);
          return a && b ? `${phase} ${(a / b).toFixed(2)}` : `${phase} n/a`;
        })
        .join(', ');
      return `${r.label} / ${peer.label}: ${text}`;
    })
    .filter((x): x is string => x !== undefined);
  await writeDocSection(
    '## Pod churn on the real cluster',
    [
      `Measured by \`node_modules/.bin/node test/bench/pod-churn/main.ts --pods ${PODS} --order ${ORDER.join(',')} --install ${INSTALL}${FRESH ? '' : ' --shared-cluster'}\` on ${when} UTC: ${machineLine(ctx.loadAtStart)}; ${versions}.`,
      `Method (Spiderpool's, at this machine's scale): the harness's ${ctx.nodes}-node cluster (test/cluster/up.sh: per node kubelet + containerd + runc in its own namespaces; kubelet maxPods ${ctx.maxPods}, the default). For each run in turn (the order above), ${FRESH ? 'on a cluster of its own, started for it and torn down after it (so nothing one run leaves behind reaches the next),' : 'in the same cluster,'} once the 1-minute load average is below ${SETTLED_LOAD} (at most 10 min of waiting): 3 Deployments totalling ${PODS} pause pods (imagePullPolicy Never, terminationGracePeriodSeconds 5) are created at once → seconds until all are Running; all pods are deleted at once (one DELETE collection, default grace) and their ReplicaSets re-create them → seconds until ${PODS} replacements are Running; the Deployments are deleted → seconds until no pod is left, and until the IPAM holds no address. Times start at the phase's first request; progress is one pod LIST per second. The chain is ptp (MTU 1400) + portmap for host-local and blockipam; the conflist is switched between IPAMs (containerd reloads it). host-local: one /24 per node (the floor: files on the node, no API). blockipam: ${INSTALL === 'chart' ? `installed by the Helm chart for its run only (\`helm install\` with Helm 4, the image from scripts/build-image.sh imported into every node; test/bench/pod-churn/install.ts) and uninstalled after it, chart defaults but the harness's API address and CNI paths and \`cni.mtu=1400\` and \`plugin.logFile\` (the per-call figures below): pool default-ipv4 10.244.0.0/16 of /26 blocks, default IPAMConfig (minFreeAddressesPerNode 16), the agent DaemonSet (the plugin executable, its conflist and bound-token kubeconfig, the node's IPAM server, routes) and the controller Deployment (2 replicas) running during blockipam's run only` : `installed by \`test/cluster/install-blockipam.sh\`, pool 10.244.0.0/16 of /26 blocks, default IPAMConfig (minFreeAddressesPerNode 16), a node agent per node running as a host process during blockipam's run only (admin kubeconfig, no routes; the plugin on its direct path), plugin log level info`}. ${ORDER.includes('calico') && !ctx.skipped.length ? `calico: ${CALICO_SETUP}. ` : ''}${ctx.skipped.join('; ')}${ctx.skipped.length ? '. ' : ''}The harness's CNI call recorder is bypassed (plugins linked directly).`,
      [
        '| run | create → all Running (s) | delete all → all re-created Running (s) | delete Deployments → no pod (s) | → no address held (s) | pods per node after create | load average (before → after) |',
        '| --- | --- | --- | --- | --- | --- | --- |',
        ...rows,
      ].join('\n'),
      `Ratios blockipam / host-local, one invocation of the bench${FRESH ? ' (each run on a cluster of its own)' : ' (one cluster)'}: ${ratios('blockipam', 'host-local')} (goal: create within 1.2×).${pairs.length > 1 ? ` Pair by pair (each blockipam run against the host-local run beside it): ${pairs.join('; ')}.` : ''}${runs.some((r) => r.ipam === 'calico') ? ` Ratios calico / blockipam: ${ratios('calico', 'blockipam')}; calico / host-local: ${ratios('calico', 'host-local')}.` : ''}`,
      ...runs.filter((r) => r.extra).map((r) => `${r.label}: ${r.extra}.`),
      ...charts.map(
        (link, i) =>
          `![${['pods Running over time, create', 'pods Running over time, re-create', 'wall time per phase'][i]}](${link})`,
      ),
    ].join('\n\n'),
  );
}

await main();
