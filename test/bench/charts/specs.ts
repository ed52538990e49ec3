/**
 * The benchmark charts as Vega-Lite specifications (pure: data in, spec out; rendering is
 * ./render.ts). Three shapes serve every figure of docs/benchmarks.md:
 *
 * - {@link lineSpec}: series over x (cost curves, pods Running over time);
 * - {@link histogramSpec}: distributions of samples (ADD latency per IPAM), overlaid per series;
 * - {@link barSpec}: one value per category, grouped by series (wall time per phase per IPAM).
 *
 * Every chart carries a title and subtitle lines: the machine, its load average, the versions
 * and the method of the run (docs/benchmarks.md: "every figure says machine, load, versions and
 * method"), so an SVG read on its own still says where its numbers came from.
 */
import type { TopLevelSpec } from 'vega-lite';

/** An axis: its title (with the unit, e.g. "wall time (s)") and its scale. */
export interface Axis {
  readonly title: string;
  /** @default 'linear'; 'log' for cost curves over sizes that grow 10× per step */
  readonly scale?: 'linear' | 'log';
}

/** What every chart says about itself. */
export interface ChartText {
  readonly title: string;
  /** Lines under the title: machine, load average, versions, method. @default none */
  readonly subtitle?: readonly string[];
}

/** One named series of (x, y) points, drawn in the order given. */
export interface Series {
  readonly name: string;
  readonly points: readonly (readonly [x: number, y: number])[];
}

/** A line chart: one line per series, a point on every sample. */
export interface LineChart extends ChartText {
  readonly x: Axis;
  readonly y: Axis;
  readonly series: readonly Series[];
  /** Draw as a step function (a count that holds until the next sample). @default false */
  readonly step?: boolean;
}

/** A histogram: the samples of each series binned on one shared axis, series overlaid. */
export interface Histogram extends ChartText {
  /** The sample axis (e.g. "ADD latency (ms)"); the other axis counts samples. */
  readonly x: Axis;
  readonly series: readonly { readonly name: string; readonly values: readonly number[] }[];
  /** Upper bound on the number of bins (Vega-Lite picks round bin edges). @default 30 */
  readonly maxBins?: number;
}

/** A bar chart: one bar per (category, series), series side by side within a category. */
export interface BarChart extends ChartText {
  readonly y: Axis;
  /** Category axis title, e.g. "phase". */
  readonly categoryTitle: string;
  readonly bars: readonly { readonly category: string; readonly series: string; readonly value: number }[];
}

/** Plot area in CSS pixels: wide enough for a doc column, small enough to sit beside its table. */
const WIDTH = 560;
const HEIGHT = 280;
const SCHEMA = 'https://vega.github.io/schema/vega-lite/v6.json';

/** The fields every chart shares: schema, title block, size, white background, legend below. */
function frame(text: ChartText) {
  return {
    $schema: SCHEMA,
    title: {
      text: text.title,
      ...(text.subtitle?.length ? { subtitle: [...text.subtitle] } : {}),
      anchor: 'start' as const,
      subtitleFontSize: 10,
    },
    width: WIDTH,
    height: HEIGHT,
    config: {
      background: 'white',
      font: 'sans-serif',
      legend: { orient: 'bottom' as const, direction: 'vertical' as const, labelLimit: 0 },
    },
  };
}

const scaleOf = (axis: Axis): { type: 'linear' | 'log'; zero?: boolean } =>
  axis.scale === 'log' ? { type: 'log' } : { type: 'linear', zero: true };

/**
 * @throws RangeError naming the field when a series has no points, or a log axis gets a value ≤ 0
 */
export function lineSpec(chart: LineChart): TopLevelSpec {
  const values = chart.series.flatMap((s, order) => {
    if (s.points.length === 0) throw new RangeError(`series "${s.name}": points is empty`);
    return s.points.map(([x, y]) => {
      if (chart.x.scale === 'log' && !(x > 0))
        throw new RangeError(`series "${s.name}": x ${x} on a log axis`);
      if (chart.y.scale === 'log' && !(y > 0))
        throw new RangeError(`series "${s.name}": y ${y} on a log axis`);
      return { x, y, series: s.name, order };
    });
  });
  return {
    ...frame(chart),
    data: { values },
    mark: { type: 'line', point: { size: 24 }, interpolate: chart.step ? 'step-after' : 'linear' },
    encoding: {
      x: { field: 'x', type: 'quantitative', title: chart.x.title, scale: scaleOf(chart.x) },
      y: { field: 'y', type: 'quantitative', title: chart.y.title, scale: scaleOf(chart.y) },
      color: {
        field: 'series',
        type: 'nominal',
        title: null,
        sort: chart.series.map((s) => s.name),
      },
      order: { field: 'x', type: 'quantitative' },
    },
  };
}

/** @throws RangeError naming the field when a series has no values */
export function histogramSpec(chart: Histogram): TopLevelSpec {
  const values = chart.series.flatMap((s) => {
    if (s.values.length === 0) throw new RangeError(`series "${s.name}": values is empty`);
    return s.values.map((v) => ({ v, series: s.name }));
  });
  return {
    ...frame(chart),
    data: { values },
    mark: { type: 'bar', opacity: 0.55, binSpacing: 0 },
    encoding: {
      x: {
        field: 'v',
        type: 'quantitative',
        bin: { maxbins: chart.maxBins ?? 30 },
        title: chart.x.title,
      },
      y: { aggregate: 'count', type: 'quantitative', title: 'samples', stack: null },
      color: { field: 'series', type: 'nominal', title: null, sort: chart.series.map((s) => s.name) },
    },
  };
}

/** @throws RangeError naming the field when there are no bars */
export function barSpec(chart: BarChart): TopLevelSpec {
  if (chart.bars.length === 0) throw new RangeError('bars is empty');
  const order = [...new Set(chart.bars.map((b) => b.series))];
  const categories = [...new Set(chart.bars.map((b) => b.category))];
  return {
    ...frame(chart),
    data: { values: chart.bars.map((b) => ({ ...b })) },
    mark: { type: 'bar' },
    encoding: {
      x: {
        field: 'category',
        type: 'nominal',
        title: chart.categoryTitle,
        sort: categories,
        axis: { labelAngle: 0 },
      },
      xOffset: { field: 'series', type: 'nominal', sort: order },
      y: { field: 'value', type: 'quantitative', title: chart.y.title, scale: scaleOf(chart.y) },
      color: { field: 'series', type: 'nominal', title: null, sort: order },
    },
  };
}
