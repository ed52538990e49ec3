/**
 * The report of test/bench/churn-bench.ts: the "IPAM churn" section of docs/benchmarks.md (tables,
 * same-run ratios against calico-ipam, where the time goes) from one run's phases.
 */
import { join } from 'node:path';
import { barSpec, histogramSpec, lineSpec, machineLine, writeChart } from './charts/index.ts';
import { percentile as pct } from './cost-curves/common.ts';
import { writeDocSection } from './doc-section.ts';
import { fmt } from './plugin-bench-lib.ts';
import { readBlockipamLogs, type BlockipamCall, readCalicoLockWaits } from './churn-lib.ts';

/** One phase of one IPAM: every node's calls issued at once. */
export interface ChurnPhase {
  readonly ipam: 'blockipam' | 'calico' | 'whereabouts';
  readonly name: string;
  readonly phase: string;
  readonly cmd: 'ADD' | 'DEL';
  readonly calls: number;
  readonly loadAtStart: number;
  /** ms since epoch when the first call was issued. */
  readonly startedAtMs: number;
  /** First call issued → last call exited, ms. */
  readonly wallMs: number;
  /** Each call's spawn-to-exit wall time, ms. */
  readonly ms: readonly number[];
  /** Per node: its slowest call, ms (the node's own phase time). */
  readonly perNodeWallMs: readonly number[];
  readonly failures: number;
  readonly failureSamples: readonly string[];
  /** Distinct addresses handed out (ADD phases). */
  readonly distinct: number;
  /** API requests of this IPAM in the phase (apiserver_request_total delta). */
  readonly requests: number;
  /** Of them, answered 409 Conflict. */
  readonly conflicts: number;
  readonly kinds: Readonly<Record<string, number>>;
  readonly apiserverCpuS: number;
  readonly etcdCpuS: number;
  /** CPU of the IPAM processes themselves (their exit-time totals), s. */
  readonly ipamCpuS: number;
  /** CPU of the blockipam node agents during the phase, s (0 for the others). */
  readonly agentCpuS: number;
  /** Calls whose spawn was held back for memory (churn-node.ts' floor). */
  readonly delayed: number;
  /** Call ids (`<containerID>-<CMD>`). */
  readonly ids: readonly string[];
  /** When each successful call exited, ms after the phase started, ascending. */
  readonly doneAtMs: readonly number[];
}

export interface ChurnRun {
  readonly when: string;
  readonly nodes: number;
  readonly pods: number;
  readonly serverVersion: string;
  readonly node: string;
  readonly logDir: string;
  readonly blockipamLogs: readonly string[];
  readonly calicoLogs: readonly string[];
  readonly phases: readonly ChurnPhase[];
  /** CPU ms per call of each IPAM in the warm-up (one ADD and one DEL per node, no contention on a node). */
  readonly warmCpuMs: Readonly<Record<string, number>>;
  /** The nice value kube-apiserver's and etcd's threads ran at (0: as started). */
  readonly controlPlaneNice?: number;
  /**
   * How blockipam's plugin reached its node's IPAM: `agent`, every call forwarded to the node's
   * agent over its socket; `direct`, its direct path (the agents only pre-claim). Absent when
   * blockipam did not run.
   */
  readonly blockipamMode?: 'agent' | 'direct';
}

const s1 = (ms: number): string => (ms / 1000).toFixed(1);
const per = (n: number, calls: number): string => (calls ? (n / calls).toFixed(2) : 'n/a');
/** The largest value; NaN (shown "n/a") for none. */
const max = (values: readonly number[]): number => (values.length ? Math.max(...values) : NaN);

/** Where blockipam's and calico-ipam's time goes, per phase. */
function breakdown(run: ChurnRun): string[] {
  const calls = readBlockipamLogs(run.blockipamLogs);
  const byId = new Map(calls.map((c) => [`${c.containerID}-${c.cmd}`, c]));
  const waits = readCalicoLockWaits(run.calicoLogs);
  const out: string[] = [
    '| IPAM | phase | lock wait p50 / p99 / max ms | lock held p50 / p99 ms | in-process call p50 ms | process start → command p50 ms | requests per call p50 / max | served by the agent |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const p of run.phases) {
    if (p.ipam === 'blockipam') {
      const mine = p.ids.flatMap((id) => byId.get(id) ?? []);
      const lock = mine.flatMap((c) => (c.lockWaitMs === undefined ? [] : [c.lockWaitMs]));
      const total = mine.flatMap((c) => (c.totalMs === undefined ? [] : [c.totalMs]));
      const before = mine.flatMap((c) =>
        c.totalMs === undefined || c.startMs === undefined ? [] : [c.startMs],
      );
      const req = mine.flatMap((c) => (c.apiRequests === undefined ? [] : [c.apiRequests]));
      const held = mine.flatMap((c) => (c.heldMs === undefined ? [] : [c.heldMs]));
      const viaAgent = mine.filter((c) => c.path === 'agent').length;
      if (mine.length === 0) {
        // The native forwarder writes no plugin log: the agent logged the calls it served.
        out.push(
          `| ${p.name} | ${p.phase} | n/a (native forwarder: no plugin log lines) | n/a | n/a | n/a | 0 (the agent sends them) | n/a |`,
        );
        continue;
      }
      const reqs = req.length ? `${pct(req, 50)} / ${max(req)}` : '0 (the agent sends them)';
      out.push(
        `| ${p.name} | ${p.phase} | ${fmt(pct(lock, 50))} / ${fmt(pct(lock, 99))} / ${fmt(max(lock))} | ${fmt(pct(held, 50))} / ${fmt(pct(held, 99))} | ${fmt(pct(total, 50))} | ${fmt(pct(before, 50))} | ${reqs} | ${viaAgent} of ${mine.length} |`,
      );
    } else if (p.ipam === 'calico') {
      const end = p.startedAtMs + p.wallMs;
      const w = waits.filter((x) => x.atMs >= p.startedAtMs - 5 && x.atMs <= end + 5).map((x) => x.waitMs);
      out.push(
        `| ${p.name} | ${p.phase} | ${fmt(pct(w, 50))} / ${fmt(pct(w, 99))} / ${fmt(max(w))} | n/a | ${fmt(pct(p.ms, 50))} (spawn to exit) | n/a | ${per(p.requests, p.calls)} (mean) | n/a |`,
      );
    }
  }
  out.push(...cpuBreakdown(run, byId));
  return out;
}

/**
 * blockipam's process CPU per call by stage, from the done lines: start-up (before dispatch),
 * lock wait, lock held (both 0 when the agent served the call), the rest of the command (reading
 * netconf and kubeconfig, the agent's answer or the direct path's requests, the log, exit), as
 * mean ms per call; and their sum over the phase's calls.
 */
function cpuBreakdown(run: ChurnRun, byId: ReadonlyMap<string, BlockipamCall>): string[] {
  const rows: string[] = [];
  for (const p of run.phases) {
    if (p.ipam !== 'blockipam') continue;
    const cpu = p.ids.flatMap((id) => byId.get(id)?.cpu ?? []);
    if (cpu.length === 0) continue;
    const mean = (f: (c: NonNullable<BlockipamCall['cpu']>) => number): string =>
      (cpu.reduce((a, c) => a + f(c), 0) / cpu.length).toFixed(1);
    const rest = (c: NonNullable<BlockipamCall['cpu']>): number =>
      c.total - c.start - (c.wait ?? 0) - (c.held ?? 0);
    rows.push(
      `| ${p.name} | ${p.phase} | ${cpu.length} | ${mean((c) => c.start)} | ${mean((c) => c.wait ?? 0)} | ${mean((c) => c.held ?? 0)} | ${mean(rest)} | ${mean((c) => c.total)} | ${pct(
        cpu.map((c) => c.total),
        99,
      ).toFixed(1)} | ${s1(cpu.reduce((a, c) => a + c.total, 0))} |`,
    );
  }
  if (rows.length === 0) return [];
  return [
    '',
    "blockipam's CPU per call by stage (user + system, from each call's `done` line; calls that failed have none): mean ms.",
    '',
    '| IPAM | phase | calls | start-up | lock wait | lock held | rest of the command | total | total p99 | sum, s |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
  ];
}

/** The charts of the section (SVG beside docs/benchmarks.md); returns their markdown. */
async function charts(run: ChurnRun): Promise<string[]> {
  const loads = run.phases.map((p) => p.loadAtStart);
  const subtitle = [
    machineLine(loads[0] ?? 0),
    `${run.nodes} simulated nodes × ${run.pods} calls at once · kube-apiserver ${run.serverVersion} · test/bench/churn-bench.ts, ${run.when.slice(0, 16).replace('T', ' ')} UTC`,
  ];
  const adds = run.phases.filter((p) => p.phase === 'add' && p.doneAtMs.length > 0);
  const out: string[] = [];
  const wall = await writeChart(
    'churn-phase-wall-time',
    barSpec({
      title: 'IPAM churn: wall time per phase (lower is better)',
      subtitle,
      categoryTitle: 'phase',
      y: { title: 'wall time, s' },
      bars: run.phases.map((p) => ({ category: p.phase, series: p.name, value: p.wallMs / 1000 })),
    }),
  );
  out.push(`![wall time per phase](${wall})`);
  if (adds.length > 0) {
    const running = await writeChart(
      'churn-add-completed',
      lineSpec({
        title: 'IPAM churn, add phase: calls completed over time',
        subtitle,
        x: { title: 's since the calls were issued' },
        y: { title: 'successful ADDs' },
        step: true,
        series: adds.map((p) => ({
          name: p.name,
          points: p.doneAtMs.map((t, i) => [t / 1000, i + 1] as const),
        })),
      }),
    );
    const dist = await writeChart(
      'churn-add-latency',
      histogramSpec({
        title: 'IPAM churn, add phase: ADD latency (spawn to exit)',
        subtitle,
        x: { title: 'ms' },
        series: adds.map((p) => ({ name: p.name, values: p.ms })),
      }),
    );
    out.push('', `![ADDs completed over time](${running})`, '', `![ADD latency distribution](${dist})`);
  }
  return out;
}

/** What blockipam's side was (`--blockipam-mode`), for the method text; '' when it did not run. */
function modeText(run: ChurnRun): string {
  const agents = `a real node agent per node (\`block-controller/agent/main.ts\`, log level info) runs in the node's namespace, its API traffic on the node's relay`;
  if (run.blockipamMode === 'agent')
    return ` blockipam (\`--blockipam-mode agent\`, as the chart installs it): ${agents}, serving the node's IPAM on its own socket (\`--ipam-socket\`, a directory of its own); the node's netconf names that socket (\`ipam.agentSocket\`), so every ADD and DEL goes plugin → agent socket, and the agent's block writes are the node's requests; the phases start once every agent's /readyz answers 200.`;
  if (run.blockipamMode === 'direct')
    return ` blockipam (\`--blockipam-mode direct\`): the plugin on its direct path (\`ipam.mode: standalone\`: the node's host lock, its requests from the plugin process); ${agents}, without a socket (pre-claim only).`;
  return '';
}

/** Renders the section; `writeDocs(docsDir)` writes the charts and replaces "## IPAM churn" in docs/benchmarks.md. */
export function renderChurn(run: ChurnRun): {
  markdown: string;
  breakdown: string[];
  writeDocs: (docsDir: string) => Promise<void>;
} {
  const loads = run.phases.map((p) => p.loadAtStart);
  const lines: string[] = [
    '## IPAM churn',
    '',
    `Measured by \`node test/bench/churn-bench.ts\` on ${run.when.slice(0, 16).replace('T', ' ')} UTC: 2 cores (load average at the phases' starts ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}), kube-apiserver ${run.serverVersion} + etcd on loopback, Node ${run.node}.${
      run.controlPlaneNice
        ? ` kube-apiserver, etcd and the relays that carry the nodes' traffic to it (a process per node and one on the host, standing for the network) run at nice ${run.controlPlaneNice} (every thread, set before each phase): on a cluster the control plane has its own machines and the network is no process, and here a burst of 1,000 IPAM processes at nice 0 would otherwise starve them — for every IPAM alike (\`--control-plane-nice 0\` turns it off).`
        : ''
    }`,
    `${run.nodes} simulated nodes (a network namespace each, so each has its own host lock and, for blockipam, its own agent) × ${run.pods} ADDs issued at once per node; the IPAM alone, exec'd as ptp would exec it, by a process inside the node's namespace; a relay process in the namespace and one on the host carry its traffic to the API server.${modeText(run)} Phases: add → mass DEL → re-add (new pods) → DEL, interleaved across IPAMs. Wall time: first call issued → last call exited; latencies spawn to exit; requests and 409s from kube-apiserver's \`apiserver_request_total\` (blockipam's include its ${run.nodes} agents' requests during the phase; in agent mode the agents send all of them); CPU from /proc/<pid>/stat.`,
    '',
    '| IPAM | phase | wall s | call p50 ms | call p99 ms | failures | distinct addresses | API requests / call | 409s / call | IPAM processes CPU s | agents CPU s | kube-apiserver CPU s | etcd CPU s | load at start |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const p of run.phases)
    lines.push(
      `| ${p.name} | ${p.phase} | ${s1(p.wallMs)} | ${fmt(pct(p.ms, 50))} | ${fmt(pct(p.ms, 99))} | ${p.failures} | ${p.cmd === 'ADD' ? p.distinct : '–'} | ${per(p.requests, p.calls)} | ${per(p.conflicts, p.calls)} | ${p.ipamCpuS.toFixed(1)} | ${p.ipam === 'blockipam' ? p.agentCpuS.toFixed(1) : '–'} | ${p.apiserverCpuS.toFixed(1)} | ${p.etcdCpuS.toFixed(1)} | ${p.loadAtStart.toFixed(1)} |`,
    );
  const find = (ipam: string, phase: string) => run.phases.find((p) => p.ipam === ipam && p.phase === phase);
  const ratios = [...new Set(run.phases.map((p) => p.phase))].map((phase) => {
    const b = find('blockipam', phase);
    const c = find('calico', phase);
    return b && c ? `${phase} ${(c.wallMs / b.wallMs).toFixed(2)}×` : `${phase} n/a`;
  });
  const bFail = run.phases.filter((p) => p.ipam === 'blockipam').reduce((a, p) => a + p.failures, 0);
  lines.push(
    '',
    `Same-run speed-up of blockipam over calico-ipam (calico-ipam's wall time / blockipam's; goal ≥ 2×): ${ratios.join(', ')}; blockipam failures: ${bFail} (goal 0).`,
  );
  const samples = run.phases.filter((p) => p.failureSamples.length > 0);
  if (samples.length > 0) {
    lines.push('', 'Failures, first distinct messages per phase:', '');
    for (const p of samples)
      lines.push(
        `- ${p.name} ${p.phase}: ${p.failureSamples.map((f) => `\`${f.replace(/[`|\n]/g, ' ')}\``).join('; ')}`,
      );
  }
  const cpuPer = run.phases.map((p) => `${p.name} ${p.phase} ${((p.ipamCpuS * 1000) / p.calls).toFixed(0)}`);
  lines.push(
    '',
    `IPAM process CPU per call, ms (user + system, the processes' own): warm-up without contention on a node ${Object.entries(
      run.warmCpuMs,
    )
      .map(([k, v]) => `${k} ${v.toFixed(0)}`)
      .join(', ')}; in the phases ${cpuPer.join(', ')}.`,
  );
  const parts = breakdown(run);
  lines.push('', '### Where the time goes', '', ...parts);
  const markdown = lines.join('\n');
  return {
    markdown,
    breakdown: parts,
    writeDocs: async (docsDir) => {
      const figures = await charts(run);
      await writeDocSection('## IPAM churn', `${markdown}\n\n${figures.join('\n')}`, {
        path: join(docsDir, 'benchmarks.md'),
      });
    },
  };
}
