/**
 * Output formats shared by the read commands: aligned tables (the default, like kubectl get),
 * JSON and YAML (`-o json|yaml`). The `yaml` package is used here only.
 */
import { stringify } from 'yaml';
import { println } from './io.ts';
import type { TextOut } from './io.ts';

export const FORMATS = ['table', 'json', 'yaml'] as const;
export type Format = (typeof FORMATS)[number];

/** A table cell: text, or a number or boolean printed as `String` prints it. */
export type Cell = string | number | bigint | boolean;

/** A table: upper-case headers and rows of cells. */
export interface Table {
  headers: readonly string[];
  rows: readonly (readonly Cell[])[];
}

/** Renders a table with columns separated by three spaces, no trailing blanks. */
export function renderTable(table: Table): string {
  const widths = table.headers.map((header, i) =>
    Math.max(header.length, ...table.rows.map((row) => String(row[i] ?? '').length)),
  );
  const line = (cells: readonly Cell[]): string =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? String(cell) : String(cell).padEnd(widths[i] ?? 0)))
      .join('   ')
      .trimEnd();
  return [line(table.headers), ...table.rows.map(line)].join('\n');
}

/**
 * Prints `data` as JSON / YAML, or `table` (computed lazily) as a table.
 * BigInt values (IPv6 pool sizes) are printed as decimal strings.
 */
export function print(out: TextOut, format: Format, data: unknown, table: () => Table): void {
  if (format === 'json') println(out, JSON.stringify(data, bigintReplacer, 2));
  else if (format === 'yaml')
    out.write(stringify(JSON.parse(JSON.stringify(data, bigintReplacer)) as unknown));
  else println(out, renderTable(table()));
}

function bigintReplacer(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}
