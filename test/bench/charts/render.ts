/**
 * Renders the specs of ./specs.ts to SVG text with Vega (headless: the `none` renderer builds
 * the scene graph, `toSVG()` serialises it; no browser, no canvas — text widths are Vega's
 * estimate) and writes them next to docs/benchmarks.md, under docs/benchmarks/.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, View } from 'vega';
import { compile } from 'vega-lite';
import type { TopLevelSpec } from 'vega-lite';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** Where the charts live: beside docs/benchmarks.md, which embeds them as `benchmarks/NAME.svg`. */
export const CHART_DIR = join(repoRoot, 'docs', 'benchmarks');

/** Chart names: lower-case words joined by '-' (they become file names and doc links). */
const NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

/** @returns the SVG document of `spec` (one `<svg>` element, width and height set) */
export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  const view = new View(parse(compile(spec).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/**
 * Renders `spec` to `dir/NAME.svg` (default {@link CHART_DIR}).
 * @returns the path relative to docs/ (`benchmarks/NAME.svg`), as docs/benchmarks.md links it
 * @throws RangeError when `name` is not lower-case words joined by '-'
 */
export async function writeChart(name: string, spec: TopLevelSpec, dir = CHART_DIR): Promise<string> {
  if (!NAME.test(name)) throw new RangeError(`chart name "${name}": lower-case words joined by '-'`);
  const svg = await renderSvg(spec);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${name}.svg`), `${svg}\n`);
  return `benchmarks/${name}.svg`;
}

/**
 * The subtitle line every figure carries about its machine, e.g.
 * "2 cores (AMD EPYC 7B13), 24 GiB · load average 3.41 at the start · Node v24.21.0".
 * @param load the 1-minute load average to report; @default the current one
 */
export function machineLine(load = loadavg()[0] ?? 0): string {
  const model = cpus()[0]?.model.trim() ?? 'unknown CPU';
  return `${cpus().length} cores (${model}), ${Math.round(totalmem() / 2 ** 30)} GiB · load average ${load.toFixed(2)} at the start · Node ${process.version}`;
}
