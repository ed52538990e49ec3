/**
 * The report of test/bench/burst-bench.ts: per-round rows, medians per mode with the ratio
 * agent / standalone against the goals, request kinds, and (with writeDocs) docs/benchmarks.md
 * §Burst and its two charts.
 */
import { barSpec, histogramSpec, machineLine, writeChart } from './charts/index.ts';
import { writeDocSection } from './doc-section.ts';
import { percentile as pct } from './cost-curves/common.ts';

/** One burst of one mode: N calls of one command at once. */
export interface Burst {
  readonly mode: 'agent' | 'standalone';
  readonly command: 'ADD' | 'DEL';
  /** 1-based; the warm-up round 0 is not reported */
  readonly round: number;
  /** first fork to last exit, ms */
  readonly wallMs: number;
  /** user + system CPU of each plugin process, ms (wait4) */
  readonly cpuMs: readonly number[];
  /** "CNI <code> (<msg>)" or "exit <n>" per failed call */
  readonly failures: readonly string[];
  /** ipamblocks PUTs, every code */
  readonly updates: number;
  /** ipamblocks PUTs answered 409 */
  readonly conflicts: number;
  /** the other requests of burst-lib.ts IPAM_REQUEST */
  readonly other: number;
  /** [`group/resource VERB code`, count] of IPAM_REQUEST, whole burst */
  readonly kinds: readonly (readonly [string, number])[];
  /** the agent process's CPU over the burst, ms; NaN in standalone mode */
  readonly agentCpuMs: number;
  /** calls of this command the agent's IPAM server counted; NaN in standalone mode */
  readonly served: number;
  /** distinct address sets among successful ADDs; NaN for DEL */
  readonly distinct: number;
  /** allocations of the burst's container IDs left after the DELs; NaN for ADD */
  readonly leaked: number;
}

export interface BurstRun {
  readonly calls: number;
  readonly rounds: number;
  /** 1-minute load average at the start and at the end */
  readonly loadStart: number;
  readonly loadEnd: number;
  readonly serverVersion: string;
  /** the commit the plugin and agent were built from (`git rev-parse --short HEAD`) */
  readonly commit: string;
  readonly writeDocs: boolean;
}

const MODES = ['agent', 'standalone'] as const;
const f = (v: number, d = 1): string => (Number.isNaN(v) ? '—' : v.toFixed(d));
const med = (v: readonly number[]): number => pct(v, 50);
const met = (ok: boolean): string => (ok ? 'met' : 'not met');

/** Medians over rounds (per-call CPU: over every call of every round) for one mode. */
function medians(bursts: readonly Burst[], mode: string, calls: number) {
  const of = (c: 'ADD' | 'DEL') => bursts.filter((b) => b.mode === mode && b.command === c);
  const [add, del] = [of('ADD'), of('DEL')];
  return {
    addWallS: med(add.map((b) => b.wallMs)) / 1000,
    delWallS: med(del.map((b) => b.wallMs)) / 1000,
    updatesPerAdd: med(add.map((b) => b.updates / calls)),
    updatesPerDel: med(del.map((b) => b.updates / calls)),
    conflictsPerAdd: med(add.map((b) => b.conflicts / calls)),
    otherPerAdd: med(add.map((b) => b.other / calls)),
    otherPerDel: med(del.map((b) => b.other / calls)),
    cpuAdd: med(add.flatMap((b) => b.cpuMs)),
    cpuAddP90: pct(
      add.flatMap((b) => b.cpuMs),
      90,
    ),
    cpuDel: med(del.flatMap((b) => b.cpuMs)),
    agentCpuPerAdd: med(add.map((b) => b.agentCpuMs / calls)),
    agentCpuPerDel: med(del.map((b) => b.agentCpuMs / calls)),
    failed: [...add, ...del].reduce((n, b) => n + b.failures.length, 0),
    leaked: del.reduce((n, b) => n + b.leaked, 0),
  };
}

/** "code × n, ..." of every failure of these bursts, or "none". */
function failureCodes(bursts: readonly Burst[]): string {
  const counts = new Map<string, number>();
  for (const b of bursts) for (const x of b.failures) counts.set(x, (counts.get(x) ?? 0) + 1);
  return counts.size === 0 ? 'none' : [...counts].map(([code, n]) => `${cell(code)} × ${n}`).join(', ');
}
/** A table cell's text: a '|' escaped. */
const cell = (s: string): string => s.replace(/\|/g, '\\|');

/** Builds the report; with run.writeDocs also docs/benchmarks.md §Burst and its charts. */
export async function renderBurst(bursts: readonly Burst[], run: BurstRun): Promise<string> {
  const N = run.calls;
  const rows = bursts
    .filter((x) => x.command === 'ADD')
    .map((add) => {
      const del = bursts.find((x) => x.command === 'DEL' && x.mode === add.mode && x.round === add.round);
      return `| ${add.round} | ${add.mode} | ${f(add.wallMs, 0)} | ${f(del?.wallMs ?? NaN, 0)} | ${f(add.updates / N, 2)} (${add.conflicts} × 409) | ${f((del?.updates ?? NaN) / N, 2)} | ${f(add.other / N, 2)} | ${f((del?.other ?? NaN) / N, 2)} | ${f(med(add.cpuMs))} | ${f(med(del?.cpuMs ?? []))} | ${f(add.agentCpuMs / N, 2)} | ${add.failures.length + (del?.failures.length ?? 0)} | ${add.mode === 'agent' ? `${add.served} + ${del?.served ?? '—'}` : '—'} | ${add.distinct} | ${del?.leaked ?? '—'} |`;
    });
  const a = medians(bursts, 'agent', N);
  const s = medians(bursts, 'standalone', N);
  const ratio = (x: number, y: number): string => (y > 0 ? (x / y).toFixed(2) : '—');
  const line = (name: string, x: number, y: number, d: number, goal: string): string =>
    `| ${name} | ${f(x, d)} | ${f(y, d)} | ${ratio(x, y)} | ${goal} |`;
  const summary = [
    '| median over rounds | agent | standalone | agent / standalone | goal (agent) |',
    '| --- | --- | --- | --- | --- |',
    line(`ADD burst wall time (s), ${N} calls`, a.addWallS, s.addWallS, 2, '≤ 3 s'),
    line(`DEL burst wall time (s), ${N} calls`, a.delWallS, s.delWallS, 2, ''),
    line('block UPDATEs per ADD', a.updatesPerAdd, s.updatesPerAdd, 2, '≤ 0.2'),
    line('block UPDATEs per DEL', a.updatesPerDel, s.updatesPerDel, 2, ''),
    line('409s per ADD', a.conflictsPerAdd, s.conflictsPerAdd, 2, ''),
    line('other API requests per ADD', a.otherPerAdd, s.otherPerAdd, 2, ''),
    line('other API requests per DEL', a.otherPerDel, s.otherPerDel, 2, ''),
    line('plugin CPU per ADD (ms, p50 of all calls)', a.cpuAdd, s.cpuAdd, 1, '≤ 10 ms'),
    line('plugin CPU per ADD (ms, p90)', a.cpuAddP90, s.cpuAddP90, 1, ''),
    line('plugin CPU per DEL (ms, p50)', a.cpuDel, s.cpuDel, 1, '≤ 10 ms'),
    `| agent CPU per ADD / per DEL (ms) | ${f(a.agentCpuPerAdd, 2)} / ${f(a.agentCpuPerDel, 2)} | — | — | |`,
    `| failed calls (all rounds) | ${a.failed} | ${s.failed} | — | 0 |`,
    `| allocations left after the DELs | ${a.leaked} | ${s.leaked} | — | 0 |`,
  ];
  const perRound = [
    '| round | mode | ADD wall ms | DEL wall ms | UPDATEs / ADD | UPDATEs / DEL | other / ADD | other / DEL | plugin CPU / ADD p50 ms | / DEL p50 ms | agent CPU / ADD ms | failed | served by the agent (ADD + DEL) | distinct addresses | left after DEL |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
  ];
  const last = Math.max(...bursts.map((x) => x.round));
  const kinds = bursts
    .filter((x) => x.round === last)
    .map(
      (x) =>
        `- ${x.mode} ${x.command}: ${x.kinds.map(([k, n]) => `${k} × ${(n / N).toFixed(2)}`).join(', ') || 'none'}`,
    );
  const when = new Date().toISOString().slice(0, 16).replace('T', ' ');
  const text = [
    `${N} calls per burst, ${run.rounds} rounds, ${when} UTC, plugin and agent of ${run.commit}, kube-apiserver ${run.serverVersion}, Node ${process.version}; load average (1 min) ${run.loadStart.toFixed(2)} at the start, ${run.loadEnd.toFixed(2)} at the end.`,
    '',
    ...summary,
    '',
    `Against the goals (agent, medians): ADD burst ${f(a.addWallS, 2)} s (${met(a.addWallS <= 3)}), ${f(a.updatesPerAdd, 2)} block UPDATEs per ADD (${met(a.updatesPerAdd <= 0.2)}), plugin CPU ${f(a.cpuAdd)} ms per ADD and ${f(a.cpuDel)} ms per DEL (${met(a.cpuAdd <= 10 && a.cpuDel <= 10)}).`,
    '',
    ...perRound,
    '',
    `Failures by code: agent ${failureCodes(bursts.filter((x) => x.mode === 'agent'))}; standalone ${failureCodes(bursts.filter((x) => x.mode === 'standalone'))}.`,
    '',
    `API requests per call by kind (round ${last}, \`group/resource VERB code\`):`,
    '',
    ...kinds,
  ].join('\n');
  if (run.writeDocs) await writeDocs(bursts, run, text, { agent: a, standalone: s });
  return text;
}

async function writeDocs(
  bursts: readonly Burst[],
  run: BurstRun,
  text: string,
  m: Record<(typeof MODES)[number], ReturnType<typeof medians>>,
): Promise<void> {
  const subtitle = [
    machineLine(run.loadStart),
    `${run.calls} parallel calls on one node · medians of ${run.rounds} rounds · kube-apiserver ${run.serverVersion} · test/bench/burst-bench.ts`,
  ];
  const wall = await writeChart(
    'burst-wall-time',
    barSpec({
      title: `Burst of ${run.calls} calls on one node: wall time (lower is better)`,
      subtitle,
      categoryTitle: 'burst',
      y: { title: 'wall time, s (first spawn to last exit)' },
      bars: MODES.flatMap((mode) => [
        { category: 'ADD', series: mode, value: m[mode].addWallS },
        { category: 'DEL', series: mode, value: m[mode].delWallS },
      ]),
    }),
  );
  const cpu = await writeChart(
    'burst-plugin-cpu',
    histogramSpec({
      title: 'Burst, ADD: plugin CPU per call (user + system, wait4)',
      subtitle,
      x: { title: 'CPU per plugin process, ms' },
      series: MODES.map((mode) => ({
        name: mode,
        values: bursts.filter((x) => x.mode === mode && x.command === 'ADD').flatMap((x) => x.cpuMs),
      })),
    }),
  );
  await writeDocSection(
    '## Burst',
    `\`node test/bench/burst-bench.ts --calls ${run.calls} --rounds ${run.rounds}\` (\`bash scripts/bench.sh burst\` runs the defaults, 100 calls and 3 rounds).
One kube-apiserver + etcd on loopback, the CRDs, one pool of /26 blocks. \`agent\`: the plugin as the agent installs it from the image (the native forwarder as \`blockipam\`, the Bun executable beside it as \`blockipam-direct\`) with \`ipam.agentSocket\`, forwarding to ONE real node agent process (\`block-controller/agent/main.ts\`, its IPAM socket in a temp directory; no routes, nothing on the host changed); \`standalone\`: the same installed \`blockipam\` with \`ipam.mode: standalone\` (the forwarder execs the direct path: host lock, LIST of the node's blocks, core's allocation with compare-and-swap) for another node, which has no agent. Per mode a warm-up burst first (not counted: the node's blocks get claimed), then the rounds, the two modes taking turns (which goes first alternates). A burst is ${run.calls} plugin processes forked at once, each with its own container ID, no pod (CNI_ARGS empty: no pod or namespace reads), then their ${run.calls} DELs at once.
Wall time: first fork to last exit. Block UPDATEs and other requests: kube-apiserver's \`apiserver_request_total\` over the burst (\`ipamblocks\` PUTs; other = blockipam's kinds and pods, namespaces, nodes, not WATCHes — the agent's own requests included), divided by the calls. Plugin CPU: user + system of each plugin process from \`wait4(2)\` (the whole process: runtime start-up, module load, exit), not the plugin's own \`done\` log line. Agent CPU: the agent process over the burst (\`/proc\`), divided by the calls. "Served by the agent": the calls the agent's \`blockipam_agent_ipam_requests_total\` counted (a call that fell back to the direct path would be missing). "Left after DEL": the burst's allocations still on the API server.
This machine (2 cores) is shared with other engineers' builds and tests while the bench runs: the load average above is what it was (the figure at the end also counts the last burst's own processes, up to ${run.calls} runnable at once), and wall times move with it between runs; the two modes take turns so that load falls on both alike.

Goals for the agent path: a ${run.calls}-ADD burst ≤ 3 s, ≤ 0.2 block UPDATEs per ADD, ≤ 10 ms of plugin CPU per call. Before the agent served IPAM, the direct path took 6.2–6.7 s for a burst of 100 ADDs (§CNI plugin), about one block UPDATE per ADD, and 33–41 ms of CPU per plugin call.

${text}

![Burst wall time](${wall})

![Burst plugin CPU per call](${cpu})`,
    { after: '## Thin client: CPU per call' },
  );
}
