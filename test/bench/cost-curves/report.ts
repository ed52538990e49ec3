/**
 * Turns a measured curve into its part of docs/benchmarks.md: a `### title` subsection under
 * `## Cost curves` with the run's context line, the method, a table of every size and the chart
 * (rendered to docs/benchmarks/NAME.svg by test/bench/charts/).
 */
import { lineSpec, machineLine, writeChart } from '../charts/index.ts';
import type { Axis } from '../charts/index.ts';
import { writeDocSection } from '../doc-section.ts';
import type { CurvePoint } from './common.ts';

/** One curve's series: points plus the figure drawn on the y axis. */
export interface CurveSeries {
  readonly name: string;
  readonly points: readonly CurvePoint[];
  /** The figure (a key of CurvePoint.figures) the chart draws. */
  readonly y: string;
  /** false: drawn only — its points are another series' (same rows), default true. */
  readonly inTable?: boolean;
}

export interface CurveReport {
  /** File name of the chart (docs/benchmarks/NAME.svg). */
  readonly chart: string;
  /** Subsection heading text, e.g. "Claim search vs blocks in the pool". */
  readonly title: string;
  readonly x: Axis;
  readonly y: Axis;
  readonly series: readonly CurveSeries[];
  /** How it was measured (markdown), shown above the table and in short on the chart. */
  readonly method: string;
  /** A short form of `method` for the chart's subtitle. */
  readonly methodShort: string;
  /** The command that measures it. */
  readonly command: string;
  /** Versions line, e.g. "kube-apiserver v1.37.2 + etcd v3.7.3". */
  readonly versions: string;
  /** Conclusion lines computed from the figures (goal met or not), markdown. @default none */
  readonly verdict?: string;
  /** The 1-minute load average when the curve started. */
  readonly loadAtStart: number;
}

const cell = (v: number | string | undefined): string =>
  v === undefined ? '—' : typeof v === 'number' ? String(Number(v.toFixed(v < 10 ? 2 : 1))) : v;

/** Writes the chart and the doc subsection of `report`. */
export async function publishCurve(report: CurveReport): Promise<void> {
  const when = new Date().toISOString().slice(0, 16).replace('T', ' ');
  const machine = machineLine(report.loadAtStart);
  const link = await writeChart(
    report.chart,
    lineSpec({
      title: report.title,
      subtitle: [`${when} UTC · ${machine}`, `${report.versions} · ${report.methodShort}`],
      x: report.x,
      y: report.y,
      series: report.series.map((s) => ({
        name: s.name,
        points: s.points.map((p) => [p.x, Number(p.figures[s.y])] as const),
      })),
    }),
  );
  const rows: string[] = [];
  const keys = [...new Set(report.series.flatMap((s) => s.points.flatMap((p) => Object.keys(p.figures))))];
  rows.push(`| series | ${report.x.title} | ${keys.join(' | ')} | load average (start → end) |`);
  rows.push(`| ${['', '', ...keys, ''].map(() => '---').join(' | ')} |`);
  for (const s of report.series.filter((x) => x.inTable !== false))
    for (const p of s.points)
      rows.push(
        `| ${s.name} | ${p.x} | ${keys.map((k) => cell(p.figures[k])).join(' | ')} | ${p.loadStart} → ${p.loadEnd} |`,
      );
  await writeDocSection(
    `### ${report.title}`,
    [
      `Measured by \`${report.command}\` on ${when} UTC: ${machine}; ${report.versions}.`,
      report.method,
      rows.join('\n'),
      `![${report.title}](${link})`,
      report.verdict ?? '',
    ].join('\n\n'),
    { after: '## Cost curves' },
  );
}
