/**
 * The product's line coverage from c8's json-summary (coverage-summary.json, written by
 * scripts/coverage.sh): the total and each top-level folder's, then the files no test loaded.
 *
 *   node scripts/coverage-summary.ts SUMMARY_JSON   prints the summary on stdout
 *
 * c8 counts every line of a file, comments and blank ones too: a line is covered when the V8
 * range around it ran. A file with no code left once its types are stripped (interfaces and type
 * aliases only) never loads at run time, so V8 cannot count it: it is listed apart and left out
 * of every figure.
 */
import { readFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** One file's entry in c8's (istanbul's) json-summary; only the lines figures are read. */
export interface FileSummary {
  readonly lines: { readonly total: number; readonly covered: number };
}

/** Lines covered out of lines counted, over `files` files. */
export interface LineTally {
  readonly covered: number;
  readonly total: number;
  readonly files: number;
}

export interface CoverageSummary {
  readonly total: LineTally;
  /** By top-level folder (`core`, `cli`…), sorted by name. */
  readonly folders: ReadonlyMap<string, LineTally>;
  /** Repo-relative paths of counted files with no line covered, sorted. */
  readonly uncovered: readonly string[];
  /** Repo-relative paths of type-only files (not counted), sorted. */
  readonly typeOnly: readonly string[];
}

/**
 * Tallies `summary` (keys: absolute paths, plus istanbul's `total`, which is ignored) relative to
 * `root`; `isTypeOnly(path)` (absolute) says which files to leave out.
 */
export function summarise(
  summary: Readonly<Record<string, FileSummary>>,
  root: string,
  isTypeOnly: (path: string) => boolean,
): CoverageSummary {
  const folders = new Map<string, LineTally>();
  const uncovered: string[] = [];
  const typeOnly: string[] = [];
  let total: LineTally = { covered: 0, total: 0, files: 0 };
  for (const [path, file] of Object.entries(summary)) {
    if (path === 'total') continue;
    const rel = relative(root, path);
    if (isTypeOnly(path)) {
      typeOnly.push(rel);
      continue;
    }
    const folder = rel.split(/[\\/]/)[0] ?? rel;
    folders.set(folder, add(folders.get(folder), file));
    total = add(total, file);
    if (file.lines.covered === 0) uncovered.push(rel);
  }
  return {
    total,
    folders: new Map([...folders].sort(([a], [b]) => a.localeCompare(b))),
    uncovered: uncovered.sort(),
    typeOnly: typeOnly.sort(),
  };
}

function add(tally: LineTally | undefined, file: FileSummary): LineTally {
  return {
    covered: (tally?.covered ?? 0) + file.lines.covered,
    total: (tally?.total ?? 0) + file.lines.total,
    files: (tally?.files ?? 0) + 1,
  };
}

/** True when `source` (TypeScript) holds no code once types and comments are gone. */
export function typeOnlySource(source: string): boolean {
  const code = stripTypeScriptTypes(source)
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '')
    .replace(/export\s*\{\s*\};?/g, '');
  return code.trim() === '';
}

/** `covered/total` as a percentage with one decimal (100.0 for an empty tally). */
export function percent(t: LineTally): string {
  return (t.total === 0 ? 100 : (100 * t.covered) / t.total).toFixed(1);
}

/** The printed report. */
export function format(s: CoverageSummary): string {
  const row = (name: string, t: LineTally): string =>
    `  ${name.padEnd(18)} ${percent(t).padStart(5)} %  ${t.covered}/${t.total} lines, ${t.files} files`;
  return [
    'line coverage of the product code (c8 over V8 coverage; every line counts, comments too):',
    row('total', s.total),
    ...[...s.folders].map(([name, t]) => row(`${name}/`, t)),
    `files at 0 % (${s.uncovered.length}):`,
    ...s.uncovered.map((f) => `  ${f}`),
    `type-only files, not counted (${s.typeOnly.length}): ${s.typeOnly.join(' ') || '-'}`,
    '',
  ].join('\n');
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const file = process.argv[2];
  if (file === undefined) {
    console.error('usage: node scripts/coverage-summary.ts SUMMARY_JSON');
    process.exit(2);
  }
  const root = join(dirname(fileURLToPath(import.meta.url)), '..');
  const summary = JSON.parse(readFileSync(file, 'utf8')) as Record<string, FileSummary>;
  process.stdout.write(format(summarise(summary, root, (p) => typeOnlySource(readFileSync(p, 'utf8')))));
}
