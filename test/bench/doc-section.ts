/**
 * Rewrites one section of docs/benchmarks.md: a benchmark script owns the section under its
 * heading and replaces it, leaving every other section as it was. The text is formatted as the
 * repository's `prettier --check .` expects (padded tables), so a rewrite keeps lint green.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { format } from 'prettier';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BENCHMARKS_DOC = join(repoRoot, 'docs', 'benchmarks.md');

/**
 * Replaces the section that starts with the line `heading` (e.g. `### ipamctl check`) up to the
 * next heading of the same or a higher level; appends it after `after` (a heading, default the
 * end of the file) when the document has no such section.
 * @param body the section's text below its heading (markdown; a first line that is `heading` is dropped)
 */
export async function writeDocSection(
  heading: string,
  body: string,
  options: { after?: string; path?: string } = {},
): Promise<void> {
  const path = options.path ?? BENCHMARKS_DOC;
  const level = /^(#+) /.exec(heading)?.[1]?.length;
  if (!level) throw new RangeError(`heading "${heading}": must start with '#'s and a space`);
  const prettier = JSON.parse(readFileSync(join(repoRoot, '.prettierrc.json'), 'utf8')) as object;
  const text = body.startsWith(`${heading}\n`) ? body.slice(heading.length + 1) : body;
  const section = (
    await format(`${heading}\n\n${text.trim()}\n`, { parser: 'markdown', ...prettier })
  ).trim();
  const lines = (existsSync(path) ? readFileSync(path, 'utf8') : '# Benchmarks\n').trimEnd().split('\n');
  const endOf = (start: number, depth: number): number => {
    for (let i = start + 1; i < lines.length; i++) {
      const m = /^(#+) /.exec(lines[i] ?? '');
      if (m?.[1] && m[1].length <= depth) return i;
    }
    return lines.length;
  };
  const start = lines.indexOf(heading);
  let out: string[];
  if (start >= 0)
    out = [...lines.slice(0, start), ...section.split('\n'), '', ...lines.slice(endOf(start, level))];
  else {
    const anchor = options.after === undefined ? -1 : lines.indexOf(options.after);
    const at =
      anchor < 0 ? lines.length : endOf(anchor, /^(#+) /.exec(options.after ?? '')?.[1]?.length ?? 1);
    out = [...lines.slice(0, at), '', ...section.split('\n'), '', ...lines.slice(at)];
  }
  writeFileSync(
    path,
    `${out
      .join('\n')
      .replace(/\n{3,}/g, '\n\n')
      .trimEnd()}\n`,
  );
}
