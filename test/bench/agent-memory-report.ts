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
  return [summary.join('\n'), detail.join('\n'), growth(rows, subjects)].join('\n\n');
}

/** "From the smallest to the largest cluster, RSS moved by ..." per subject. */
function growth(rows: readonly MemoryRow[], subjects: readonly Subject[]): string {
  const first = rows[0];
  const last = rows[rows.length - 1];
  if (!first || !last || first === last) return '';
  const moves = subjects.flatMap((s) => {
    const a = first.figures[s]?.rssMiB;
    const b = last.figures[s]?.rssMiB;
    return a === undefined || b === undefined ? [] : [`${SUBJECT_NAMES[s]} ${mib(a)} → ${mib(b)} MiB`];
  });
  return `From ${first.nodes} nodes with ${first.allocations} allocations per block to ${last.nodes} nodes with ${last.allocations} (${first.blockMiB.toFixed(1)} → ${last.blockMiB.toFixed(1)} MiB of blocks): ${moves.join('; ')}.`;
}
