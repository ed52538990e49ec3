/** The benchmark charts: Vega-Lite specs (specs.ts) rendered to SVG files (render.ts). */
export { barSpec, histogramSpec, lineSpec } from './specs.ts';
export type { Axis, BarChart, ChartText, Histogram, LineChart, Series } from './specs.ts';
export { CHART_DIR, machineLine, renderSvg, writeChart } from './render.ts';
