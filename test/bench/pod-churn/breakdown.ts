/**
 * Where a pod-churn phase's time goes (test/bench/pod-churn/main.ts): the CPU seconds each part
 * of the test cluster used over the phase, for every IPAM alike, and for blockipam the time its
 * plugin's calls spent in the node agent against the whole call, and when each node claimed its
 * first block.
 *
 * CPU: every process of the cluster is read from /proc/<pid>/stat at the phase's start, once a
 * second, and at its end; a process's share is utime + stime + cutime + cstime at its last
 * reading minus that at the start (0 for a process started later), so one that ends within the
 * phase loses at most its last second. The parts: the control plane's daemons and each node's
 * kubelet and containerd by the PIDs up.sh records (`$RUN/pids`); the containerd-shim-runc-v2
 * processes whose `-address` is a containerd socket of this cluster; the IPAM's own processes —
 * blockipam's `blockipam-agent` and `blockipam-controller`, children of this cluster's shims (the
 * chart's pods), or `agent/main.ts` children of this process (the `script` install); calico and
 * host-local have none. The CNI plugin processes (loopback, the chain and its IPAM: a process per
 * call, too short to sample) are containerd's reaped children, its cutime + cstime, which also
 * hold the shim launches (`containerd-shim-runc-v2 … start`); containerd's own utime + stime
 * count with the shims.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Cluster } from '../../helpers/cluster.ts';
import { scrapeAgents, sum } from '../../cluster/metrics.ts';
import { percentile } from '../cost-curves/common.ts';
import { parseStat, TICKS_PER_S, type ProcStat } from '../proc-stat.ts';

/** Readings during a phase: a process that ends loses at most this much of its CPU. */
const SAMPLE_MS = 1000;

export const PARTS = [
  'kube-apiserver',
  'etcd',
  'kube-controller-manager',
  'kube-scheduler',
  'kubelets',
  'containerd + shims',
  'CNI plugins + shim launches',
  'IPAM agents',
  'IPAM controllers',
] as const;
export type Part = (typeof PARTS)[number];

/** The part an up.sh-recorded daemon (`$RUN/pids/NAME`) belongs to. */
export function recordedPart(name: string): Part | undefined {
  if (name === 'apiserver') return 'kube-apiserver';
  if (name === 'etcd') return 'etcd';
  if (name === 'controller-manager') return 'kube-controller-manager';
  if (name === 'scheduler') return 'kube-scheduler';
  if (name.startsWith('kubelet-')) return 'kubelets';
  if (name.startsWith('containerd-')) return 'containerd + shims';
  return undefined;
}

/** Per agent op ("add", "del"): requests and their seconds, summed over the nodes. */
export type AgentTime = Readonly<Record<string, { readonly count: number; readonly seconds: number }>>;

/** One phase measured: its wall-clock window (ms since the epoch), CPU s per part, the agents' time. */
export interface PhaseCost {
  readonly startMs: number;
  readonly endMs: number;
  readonly cpu: Readonly<Record<Part, number>>;
  readonly agent?: AgentTime;
}

const OPS = ['add', 'del'];
const HISTOGRAM = 'blockipam_agent_ipam_request_duration_seconds';

/** Every agent's IPAM request histogram, summed per op; undefined when an agent cannot be scraped. */
function agentTotals(): AgentTime | undefined {
  try {
    const nodes = scrapeAgents();
    return Object.fromEntries(
      OPS.map((op) => [
        op,
        {
          count: nodes.reduce((a, n) => a + (sum(n.samples, `${HISTOGRAM}_count`, { op }) ?? 0), 0),
          seconds: nodes.reduce((a, n) => a + (sum(n.samples, `${HISTOGRAM}_sum`, { op }) ?? 0), 0),
        },
      ]),
    );
  } catch {
    return undefined;
  }
}

/** Measures phases on cluster `c`: {@link PhaseMeter.start} before one, `stop` after it. */
export class PhaseMeter {
  readonly #c: Cluster;
  readonly #agents: boolean;
  /** Part of each process seen, by `pid:start:comm` (an exec changes comm); null: not the cluster's. */
  readonly #parts = new Map<string, Part | null>();
  #base = new Map<string, number>();
  #last = new Map<string, { part: Part; ticks: number }>();

  /** `agents`: blockipam's agents serve metrics on the chart's port (scraped at start and stop). */
  constructor(c: Cluster, options: { agents: boolean }) {
    this.#c = c;
    this.#agents = options.agents;
  }

  #recorded(): Map<number, string> {
    const dir = join(this.#c.runDir, 'pids');
    const out = new Map<number, string>();
    for (const name of readdirSync(dir)) {
      const [pid, start] = readFileSync(join(dir, name), 'utf8').trim().split(' ');
      out.set(Number(pid), `${name} ${start}`);
    }
    return out;
  }

  #partOf(p: ProcStat, recorded: Map<number, string>, shims: ReadonlySet<number>): Part | null {
    const [name, start] = (recorded.get(p.pid) ?? '').split(' ');
    if (name && Number(start) === p.start) return recordedPart(name) ?? null;
    const cmdline = (): string => {
      try {
        return readFileSync(`/proc/${p.pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
      } catch {
        return '';
      }
    };
    if (p.comm.startsWith('containerd-shim'))
      return cmdline().includes(`${this.#c.runDir}/`) ? 'containerd + shims' : null;
    const ours = shims.has(p.ppid) || p.ppid === process.pid;
    if (ours && p.comm === 'blockipam-agent') return 'IPAM agents';
    if (ours && p.comm.startsWith('blockipam-contr')) return 'IPAM controllers';
    // Node names its main thread, and so the process, "MainThread"
    if (p.ppid === process.pid && cmdline().includes('agent/main.ts')) return 'IPAM agents';
    return null;
  }

  #read(): void {
    const stats: ProcStat[] = [];
    for (const entry of readdirSync('/proc'))
      if (/^\d+$/.test(entry))
        try {
          const s = parseStat(readFileSync(`/proc/${entry}/stat`, 'utf8'));
          if (s) stats.push(s);
        } catch {
          // gone since the listing
        }
    const recorded = this.#recorded();
    const part = (s: ProcStat, shims: ReadonlySet<number>): Part | null => {
      const key = `${s.pid}:${s.start}:${s.comm}`;
      if (!this.#parts.has(key)) this.#parts.set(key, this.#partOf(s, recorded, shims));
      return this.#parts.get(key) ?? null;
    };
    const shims = new Set(
      stats
        .filter((s) => s.comm.startsWith('containerd-shim') && part(s, new Set()) === 'containerd + shims')
        .map((s) => s.pid),
    );
    for (const s of stats) {
      const p = part(s, shims);
      if (p === null) continue;
      const key = `${s.pid}:${s.start}`;
      const containerd = p === 'containerd + shims' && !s.comm.startsWith('containerd-shim');
      this.#last.set(key, { part: p, ticks: containerd ? s.ticks : s.ticks + s.childTicks });
      if (containerd)
        this.#last.set(`${key}:children`, { part: 'CNI plugins + shim launches', ticks: s.childTicks });
    }
  }

  /** Starts measuring a phase; the returned function ends it and gives its cost. */
  start(): () => PhaseCost {
    const agentsBefore = this.#agents ? agentTotals() : undefined;
    this.#last = new Map();
    this.#read();
    this.#base = new Map([...this.#last].map(([k, v]) => [k, v.ticks]));
    const startMs = Date.now();
    const timer = setInterval(() => this.#read(), SAMPLE_MS);
    timer.unref(); // a phase that throws leaves no timer holding the process
    return () => {
      clearInterval(timer);
      this.#read();
      const cpu = Object.fromEntries(PARTS.map((p) => [p, 0])) as Record<Part, number>;
      for (const [key, { part, ticks }] of this.#last)
        cpu[part] += (ticks - (this.#base.get(key) ?? 0)) / TICKS_PER_S;
      const after = agentsBefore && agentTotals();
      const agent =
        agentsBefore && after
          ? Object.fromEntries(
              OPS.map((op) => [
                op,
                {
                  count: (after[op]?.count ?? 0) - (agentsBefore[op]?.count ?? 0),
                  seconds: (after[op]?.seconds ?? 0) - (agentsBefore[op]?.seconds ?? 0),
                },
              ]),
            )
          : undefined;
      return { startMs, endMs: Date.now(), cpu, ...(agent ? { agent } : {}) };
    };
  }
}

/** A `done` line of the plugin's log: the forwarder writes `durationMs`, the direct path `totalMs`. */
export interface DoneLine {
  readonly time?: string;
  readonly msg?: string;
  readonly cmd?: string;
  readonly durationMs?: number;
  readonly totalMs?: number;
}

/** One command's calls in a phase: the whole call (plugin log) against the agent's part (its histogram). */
export interface CallSplit {
  readonly cmd: string;
  readonly calls: number;
  readonly wholeMeanMs: number;
  readonly wholeP50Ms: number;
  /** Requests the agents' histogram counted in the phase; undefined without a scrape. */
  readonly agentRequests?: number;
  readonly agentMeanMs?: number;
}

/**
 * The ADDs and DELs whose `done` line falls in the phase's window, split: the whole call's mean and
 * p50 (ms) and, given the agents' time, the mean ms inside the agent (accept to answer); the rest
 * of the mean is outside it — the forwarder's start, the socket's round trip, the log write.
 */
export function callSplit(lines: readonly DoneLine[], cost: PhaseCost): CallSplit[] {
  return ['ADD', 'DEL'].flatMap((cmd) => {
    const ms = lines
      .filter((l) => l.msg === 'done' && l.cmd === cmd)
      .filter((l) => {
        const at = Date.parse(l.time ?? '');
        return at >= cost.startMs && at <= cost.endMs;
      })
      .flatMap((l) => {
        const whole = l.durationMs ?? l.totalMs;
        return typeof whole === 'number' ? [whole] : [];
      });
    if (ms.length === 0) return [];
    const agent = cost.agent?.[cmd.toLowerCase()];
    return [
      {
        cmd,
        calls: ms.length,
        wholeMeanMs: ms.reduce((a, b) => a + b, 0) / ms.length,
        wholeP50Ms: percentile(ms, 50),
        ...(agent && agent.count > 0
          ? { agentRequests: agent.count, agentMeanMs: (agent.seconds * 1000) / agent.count }
          : {}),
      },
    ];
  });
}

/** Seconds from `startMs` to each node's first block (`creationTimestamp`, whole seconds). */
export function firstClaims(
  blocks: readonly { readonly node: string; readonly created: string }[],
  startMs: number,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const b of blocks) {
    const s = (Date.parse(b.created) - startMs) / 1000;
    if (Number.isFinite(s) && !(s >= (out[b.node] ?? Infinity))) out[b.node] = s;
  }
  return out;
}

/** The run's fields the tables read. */
interface Measured {
  readonly label: string;
  readonly phases: readonly { readonly phase: string; readonly seconds: number }[];
  readonly costs: readonly PhaseCost[];
  readonly splits: readonly (readonly CallSplit[])[];
}

const f1 = (x: number | undefined): string => (x === undefined || Number.isNaN(x) ? '—' : x.toFixed(1));

/** The CPU table: one row per run and phase, a column per part. */
export function cpuTable(runs: readonly Measured[]): string {
  const rows = runs.flatMap((r) =>
    r.phases.map((p, i) => {
      const cpu = r.costs[i]?.cpu;
      const all = cpu ? PARTS.reduce((a, part) => a + cpu[part], 0) : undefined;
      return `| ${r.label} | ${p.phase} | ${f1(p.seconds)} | ${PARTS.map((part) => f1(cpu?.[part])).join(' | ')} | ${f1(all)} |`;
    }),
  );
  return [
    `| run | phase | wall s | ${PARTS.join(' | ')} | all |`,
    `| --- | --- | --- | ${PARTS.map(() => '---').join(' | ')} | --- |`,
    ...rows,
  ].join('\n');
}

/** blockipam's calls per run, phase and command: whole call against the agent's part. */
export function splitTable(runs: readonly Measured[]): string {
  const rows = runs.flatMap((r) =>
    r.splits.flatMap((splits, i) =>
      splits.map((s) => {
        const outside = s.agentMeanMs === undefined ? undefined : s.wholeMeanMs - s.agentMeanMs;
        return `| ${r.label} | ${r.phases[i]?.phase ?? '?'} | ${s.cmd} | ${s.calls} | ${f1(s.wholeMeanMs)} / ${f1(s.wholeP50Ms)} | ${f1(s.agentMeanMs)} (${s.agentRequests ?? '—'} requests) | ${f1(outside)} |`;
      }),
    ),
  );
  if (rows.length === 0) return '';
  return [
    '| run | phase | call | calls (plugin log) | whole call mean / p50 ms | in the agent, mean ms | outside the agent (forwarder, socket round trip), mean ms |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
  ].join('\n');
}

/** The method of the two tables, for the report. */
export const BREAKDOWN_METHOD =
  'CPU seconds per part of the cluster over each phase (user + system from /proc/<pid>/stat, read at the phase’s start, once a second and at its end; a process that ends in the phase loses at most its last second): the daemons by the PIDs up.sh records, the 3 kubelets together, containerd with its shims (containerd-shim-runc-v2 of this cluster, with the runc runs they reap), the CNI plugin processes as containerd’s reaped children (cutime + cstime: loopback, ptp + the IPAM, portmap, and the shim launches), the IPAM’s own daemons (blockipam: the chart’s agent and controller pods’ processes; host-local and calico have none). blockipam’s calls: from the plugin’s log, each `done` line’s whole call (the forwarder’s `durationMs`) in the phase it ended in, against the agents’ `blockipam_agent_ipam_request_duration_seconds` (accept to answer) scraped from every agent at the phase’s start and end; the difference of the means is the time outside the agent: the forwarder’s start, the socket’s round trip, the log write.';
