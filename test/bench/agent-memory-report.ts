/**
 * The tables of test/bench/agent-memory-bench.ts (docs/benchmarks.md §Agent memory): pure, from
 * the figures measured per cluster size, allocations per block and subject.
 */

/** What runs: the agent under Node, the image's executable, the new / old watch holders. */
export const SUBJECTS = ['agent', 'executable', 'new', 'old'] as const;
export type Subject = (typeof SUBJECTS)[number];

export const SUBJECT_NAMES: Readonly<Record<Subject, string>> = {
  agent: 'agent (source under Node)',
  executable: 'agent (executable, Bun)',
  new: 'new watches only',
  old: 'old watches only',
};

/** One process measured at idle. */
export interface Figures {
  /** VmRSS, MiB */
  readonly rssMiB: number;
  /** VmHWM (peak RSS since start), MiB */
  readonly peakMiB: number;
  /** V8 heap in use, MiB (NaN when not reported) */
  readonly heapMiB: number;
  /** start to ready (/readyz 200, or every watch listed), s */
  readonly readyS: number;
}

export interface MemoryRow {
  readonly nodes: number;
  /** allocations per block */
  readonly allocations: number;
  /** JSON of every block as written, MiB */
  readonly blockMiB: number;
  readonly figures: Partial<Record<Subject, Figures>>;
  /** 1-minute load average after the row */
  readonly load: number;
}

// How to read the tables; true of any run, so it lives with the renderer.
const READING = `Read the two rows of one size against each other: the agent holds its own node's block, so its RSS and heap must not move with the allocations per block, while the old watches hold every block and grow with the blocks' JSON. Across sizes the agent may grow only by what it holds per node, one IPAMNode each (see its V8 heap). A Node process with these modules loaded starts at about 160–170 MiB of RSS (the holders at small sizes), which moves by ±10 MiB from one start to the next; the executable's column is what the image runs, and what the chart's limit applies to.`;

const mib = (v: number | undefined): string => (v === undefined || Number.isNaN(v) ? '—' : v.toFixed(0));

/** The summary table (RSS per subject), the detail table, and a sentence on the growth. */
export function renderMemory(rows: readonly MemoryRow[], subjects: readonly Subject[]): string {
  const summary = [
    `| nodes | allocations per block | all blocks' JSON (MiB) | ${subjects.map((s) => `${SUBJECT_NAMES[s]}: RSS (MiB)`).join(' | ')} | load average after |`,
    `| --- | --- | --- | ${subjects.map(() => '---').join(' | ')} | --- |`,
    ...rows.map(
      (r) =>
        `| ${r.nodes} | ${r.allocations} | ${r.blockMiB.toFixed(1)} | ${subjects.map((s) => mib(r.figures[s]?.rssMiB)).join(' | ')} | ${r.load.toFixed(2)} |`,
    ),
  ];
  const detail = [
    '| nodes | allocations per block | process | RSS (MiB) | peak RSS (MiB) | V8 heap in use (MiB) | ready after (s) |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...rows.flatMap((r) =>
      subjects.map((s) => {
        const f = r.figures[s];
        return `| ${r.nodes} | ${r.allocations} | ${SUBJECT_NAMES[s]} | ${mib(f?.rssMiB)} | ${mib(f?.peakMiB)} | ${mib(f?.heapMiB)} | ${f ? f.readyS.toFixed(1) : '—'} |`;
      }),
    ),
  ];
  return [summary.join('\n'), detail.join('\n'), growth(rows, subjects), READING].join('\n\n');
}

/** One sentence per cluster size (fewest → most allocations per block), one over every row. */
function growth(rows: readonly MemoryRow[], subjects: readonly Subject[]): string {
  const span = (a: MemoryRow | undefined, b: MemoryRow | undefined, head: string): string[] => {
    if (!a || !b || a === b) return [];
    const moves = subjects.flatMap((s) => {
      const x = a.figures[s]?.rssMiB;
      const y = b.figures[s]?.rssMiB;
      return x === undefined || y === undefined ? [] : [`${SUBJECT_NAMES[s]} ${mib(x)} → ${mib(y)}`];
    });
    return [
      `- ${head} (${a.blockMiB.toFixed(1)} → ${b.blockMiB.toFixed(1)} MiB of blocks), RSS in MiB: ${moves.join('; ')}.`,
    ];
  };
  const sizes = [...new Set(rows.map((r) => r.nodes))];
  const lines = sizes.flatMap((n) => {
    const at = rows.filter((r) => r.nodes === n).sort((a, b) => a.allocations - b.allocations);
    const [a, b] = [at[0], at[at.length - 1]];
    return span(a, b, `At ${n} nodes, ${a?.allocations} → ${b?.allocations} allocations per block`);
  });
  const [first, last] = [rows[0], rows[rows.length - 1]];
  if (sizes.length > 1)
    lines.push(
      ...span(
        first,
        last,
        `From ${first?.nodes} nodes with ${first?.allocations} allocations per block to ${last?.nodes} with ${last?.allocations}`,
      ),
    );
  return lines.join('\n');
}

/** The method paragraph of §Agent memory; `idleS` is the idle time before a reading, s. */
export function describeMemory(idleS: number): string {
  return `One kube-apiserver + etcd on loopback, the CRDs, one pool of /26 blocks, IPAMConfig \`default\` with no pre-claim and no idle-block release. Per cluster size (nodes): that many Node objects (one InternalIP each, no other status: a kubelet's Nodes are larger), one block per node made as core makes them (\`newBlock\` + \`allocateOrdinal\`: handle \`k8s-pod-network.<64-hex container ID>.eth0\`, namespace, pod, pod UID, node, time, sequence; every allocation its node's own) and one IPAMNode per Node as the cluster controller writes it (core's \`planIPAMNodes\` over every block, pool and Node, the Node as owner). Per number of allocations per block, every block is rewritten to hold that many; no pod exists (the agent watches only its own node's pods, so pods elsewhere cost it nothing; node 0's own block is as full as every other). Then, one process at a time, for node 0: \`agent (source under Node)\`: the real agent (\`block-controller/agent/main.ts\`, as the tests start it; no routes, no install, no IPAM socket), measured once its \`/readyz\` answers 200; \`agent (executable, Bun)\`: the same agent as the image ships it (the multi-call executable through its \`blockipam-agent\` link); \`new watches only\` / \`old watches only\`: a Node process holding only today's agent's watches (its node's blocks by label, its Node by name, every IPAMNode, pools, configs, reservations, namespaces, its pods) / the previous agent's (every IPAMBlock and every Node instead of the first three), through the agents' own informer (\`block-controller/shared\`'s \`watchKind\`: paged LIST, then WATCH, every object kept), measured once every watch has listed. Each then idles ${idleS} s; RSS (VmRSS) and its peak (VmHWM) from \`/proc/<pid>/status\`, the V8 heap in use from the agent's \`/metrics\` (\`nodejs_heap_size_used_bytes\`) or the holder's \`process.memoryUsage()\`. The chart's memory limit for the agent is 256 MiB.`;
}
