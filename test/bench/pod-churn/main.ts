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
 *     [--shared-cluster] [--agent-profile DIR]
 *
 * An IPAM may appear more than once in `--order` (scripts/bench.sh runs each 3 times, each in
 * each position once): the ratios are then of each IPAM's median, each IPAM's min–max beside.
 * Per run and phase, where the time went (breakdown.ts): CPU seconds per part of the cluster and,
 * for blockipam, its calls' time in the agent against the whole call and each node's first block
 * claim. stdout: a JSON summary, then the ratios and those tables (also with `--no-docs`).
 *
 * `--agent-profile DIR` (chart install): every agent runs with Bun's `--cpu-prof` (BUN_OPTIONS, a patch of
 * the DaemonSet); each blockipam run's agent profiles and blockipam's pod logs land in DIR/run-N.
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
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { cluster, kubectl, startOwnCluster, type Cluster } from '../../helpers/cluster.ts';
import { installBlockipam } from '../../cluster/blockipam.ts';
import { repoRoot } from '../../plugin/helpers/plugin-exe.ts';
import { callSplit, firstClaims, PhaseMeter, type PhaseCost } from './breakdown.ts';
import {
  installBlockipamFor,
  pluginLog,
  pluginLogFigures,
  type InstallMode,
  type Installed,
} from './install.ts';
import { bypassRecorder, hostLocalHeld, useIpam } from './network.ts';
import type { Ipam } from './network.ts';
import { Churn } from './phases.ts';
import { breakdown, publish, ratioLine, type Options, type Run } from './report.ts';
import { calicoBlocks, calicoHeld, calicoLogFigures, cleanCalico, prepareCalico } from './calico.ts';
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
    'agent-profile': { type: 'string' },
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
  const meter = new PhaseMeter(c, { agents: ipam === 'blockipam' && INSTALL === 'chart' });
  const costs: PhaseCost[] = [];
  const measured = async (phase: () => Promise<PhaseResult>): Promise<PhaseResult> => {
    const stop = meter.start();
    try {
      return await phase();
    } finally {
      costs.push(stop());
    }
  };
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
    phases.push(await measured(() => churn.create()));
    await noteStuck();
    log(`${ipam}: create ${phases.at(-1)?.seconds.toFixed(1)} s ${JSON.stringify(phases.at(-1)?.perNode)}`);
    const blocks = ipam === 'blockipam' ? await churn.blockipamBlocks() : [];
    const blocksAfterCreate: Record<string, number> = ipam === 'calico' ? { all: calicoBlocks() } : {};
    for (const b of blocks) blocksAfterCreate[b.node] = (blocksAfterCreate[b.node] ?? 0) + 1;
    const claims = Object.entries(firstClaims(blocks, costs[0]?.startMs ?? 0))
      .sort()
      .map(([node, s]) => `${node} ${s >= 0 ? '+' : ''}${s.toFixed(1)} s`);
    phases.push(await measured(() => churn.recreate()));
    log(`${ipam}: re-create ${phases.at(-1)?.seconds.toFixed(1)} s`);
    await noteStuck();
    phases.push(
      await measured(() =>
        churn.delete(
          ipam === 'blockipam'
            ? () => churn.blockipamHeld()
            : ipam === 'calico'
              ? () => calicoHeld()
              : () => hostLocalHeld(c),
        ),
      ),
    );
    log(`${ipam}: delete ${phases.at(-1)?.seconds.toFixed(1)} s, released ${phases.at(-1)?.releasedSeconds}`);
    const extra = [
      ...(ipam === 'blockipam'
        ? [
            `blocks per node after create: ${JSON.stringify(blocksAfterCreate)}; each node's first block claimed (its creationTimestamp, whole seconds) after create's start: ${claims.join(', ') || 'none'}; ${installed?.describe ?? ''}`,
          ]
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
    const lines = ipam === 'blockipam' ? pluginLog(c) : [];
    const splits = costs.map((cost) => callSplit(lines, cost));
    const label = `${ipam} (run ${index + 1})`;
    return { ipam, label, phases, costs, splits, uptimeBefore, uptimeAfter: uptime(), extra };
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
          ? await installBlockipamFor(
              INSTALL,
              c,
              repoRoot,
              log,
              values['agent-profile'] && join(values['agent-profile'], `run-${i + 1}`),
            )
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
  const options: Options = {
    pods: PODS,
    order: ORDER,
    install: INSTALL,
    fresh: FRESH,
    settledLoad: SETTLED_LOAD,
  };
  console.log(
    [ratioLine(runs, options), ...breakdown(runs), ...runs.map((r) => `${r.label}: ${r.extra}.`)].join(
      '\n\n',
    ),
  );
  if (!values['no-docs'])
    await publish(runs, { loadAtStart, maxPods: maxPods ?? '?', nodes, skipped }, options);
}

await main();
