/**
 * docs-lint: the docs cite only what exists, and only inside the repo.
 * docs-lint: ignore-file (this file names the patterns it looks for)
 *
 * Rules (one finding per occurrence, `file:line`):
 * - `missing-path`: a repo path cited in a markdown file (a link target, or a path beginning with
 *   one of the repo's top-level folders or files, in backticks or bare; `*` globs must match a
 *   file) does not exist. Paths relative to a component folder (`commands/add.ts` in a note
 *   about `ipam-plugin/`) are not recognised as repo paths and are not checked.
 * - `missing-anchor`: a markdown anchor (`file.md#anchor`, `#anchor`), or a section reference
 *   `§Heading` (bare in a markdown file: that file; after a `docs/….md` path: that file), names
 *   no heading (GitHub's slugs: lower case, punctuation dropped, spaces → `-`, `-1` … for
 *   repeats; `<a id>` / `<a name>` count; a `§` reference is checked by its first word, see
 *   hasSection) — in source files too.
 * - `outside-citation`: a citation of a file outside the repo — `../shared`, `shared/research`,
 *   an absolute `/work/` path, `research/*.md`, `cni-spec`, or `DESIGN`/`CONVENTIONS` (with or
 *   without `.md`, `§n`) when the repo holds no such file — in markdown and source files alike:
 *   the project's docs say the thing themselves.
 * A file whose first lines contain `docs-lint: ignore-file` is skipped (this script and its
 * test, which must spell the patterns out).
 *
 * Usage: node scripts/docs-lint.ts [root]   (default: the repo). Exit 0 clean, 1 findings.
 */
import { existsSync, globSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export type DocsLintRule = 'missing-path' | 'missing-anchor' | 'outside-citation';

/** One broken citation: `line` is 1-based, `cited` the text as written. */
export interface DocsLintFinding {
  readonly file: string;
  readonly line: number;
  readonly rule: DocsLintRule;
  readonly cited: string;
}

/** Never scanned: dependencies, build output, VCS data. */
const SKIPPED_DIRS = new Set(['node_modules', '.git', 'build', 'dist', '.tmp']);
/** Scanned for outside citations and doc anchors (markdown files get every rule). */
const SOURCE_EXTENSIONS = ['.ts', '.js', '.mjs', '.sh', '.yaml', '.yml', '.json'];
/** Lock files are generated and full of package paths. */
const SKIPPED_FILES = new Set(['package-lock.json']);
/** Top-level folders a cited path may begin with even before they exist (README's layout). */
const KNOWN_TOP_DIRS = [
  'core',
  'cli',
  'ipam-plugin',
  'crds',
  'test',
  'docs',
  'scripts',
  'block-controller',
  'charts',
];
/** The marker must be this close to the top so a stray mention does not silence a file. */
const IGNORE_MARKER_LINES = 5;

const OUTSIDE_PATTERNS: readonly RegExp[] = [
  /(?:\.\.\/)+shared\b[\w./-]*/g,
  /(?<![\w./-])shared\/(?:research|DESIGN|CONVENTIONS|anchors|hooks)[\w./-]*/g,
  /(?<![\w.-])\/work\/[\w./-]*/g,
  /(?<![\w./-])research\/[\w-]+\.md/g,
  /(?<![\w./-])cni-spec\b(?:\.md)?(?: ?§[\d.]+)?/g,
];
/** Cited as outside unless the repo holds the file (root or docs/). Upstream paths (`lib/ipam/DESIGN.md`) are not citations of ours. */
const OUTSIDE_NAMED: ReadonlyArray<{ readonly name: string; readonly pattern: RegExp }> = [
  { name: 'DESIGN.md', pattern: /(?<![\w./-])DESIGN(?:\.md)?\b(?: ?§[\d–-]+)?/g },
  { name: 'CONVENTIONS.md', pattern: /(?<![\w./-])CONVENTIONS(?:\.md)?\b(?: ?§?\d+)?/g },
];

/** Lints every markdown and source file under `root`; findings sorted by file and line. */
export function lintDocs(root: string): DocsLintFinding[] {
  const absRoot = resolve(root);
  const topEntries = new Set([
    ...KNOWN_TOP_DIRS,
    ...readdirSync(absRoot).filter((n) => !SKIPPED_DIRS.has(n)),
  ]);
  const pathPattern = repoPathPattern(topEntries);
  const headings = new Map<string, Set<string>>();
  const anchorsOf = (file: string): Set<string> => {
    let set = headings.get(file);
    if (!set) {
      set = anchorsIn(readFileSync(file, 'utf8'));
      headings.set(file, set);
    }
    return set;
  };
  const outsideNamed = OUTSIDE_NAMED.filter(
    ({ name }) => !existsSync(join(absRoot, name)) && !existsSync(join(absRoot, 'docs', name)),
  );
  const findings: DocsLintFinding[] = [];
  for (const file of walk(absRoot)) {
    const text = readFileSync(file, 'utf8');
    if (text.split('\n', IGNORE_MARKER_LINES).some((l) => l.includes('docs-lint: ignore-file'))) continue;
    const rel = relative(absRoot, file);
    const isMarkdown = file.endsWith('.md');
    const add = (line: number, rule: DocsLintRule, cited: string): void => {
      findings.push({ file: rel, line, rule, cited });
    };
    text.split('\n').forEach((raw, index) => {
      const line = index + 1;
      const outside = [...OUTSIDE_PATTERNS, ...outsideNamed.map((o) => o.pattern)];
      for (const pattern of outside) {
        for (const m of raw.matchAll(pattern)) {
          const cited = m[0].replace(/[.,;:]+$/, '');
          // A relative path that resolves inside the repo to a file that exists (an import of
          // block-controller/shared/ from a sibling folder) is no outside citation.
          const inside = resolve(dirname(file), cited);
          if (cited.startsWith('../') && inside.startsWith(absRoot + '/') && existsSync(inside)) continue;
          add(line, 'outside-citation', cited);
        }
      }
      const noUrls = raw.replace(/\b[a-z][\w+.-]*:\/\/\S+/gi, ' ');
      // `docs/x.md#anchor` and `docs/x.md §Heading`, in every file.
      for (const m of noUrls.matchAll(
        /(?<![\w./-])(docs\/[\w.-]+\.md)(?:#([\w-]+)|\s+§([^\s)`,;.*][^)`,;.*]*))?/g,
      )) {
        const target = join(absRoot, m[1] ?? '');
        if (!existsSync(target)) {
          if (!isMarkdown) add(line, 'missing-path', m[1] ?? '');
          continue;
        }
        if (m[2] !== undefined && !anchorsOf(target).has(m[2])) add(line, 'missing-anchor', m[0]);
        if (m[3] !== undefined && !hasSection(anchorsOf(target), m[3]))
          add(line, 'missing-anchor', m[0].trim());
      }
      if (!isMarkdown) return;
      // Links: [text](target) — relative to the markdown file.
      for (const m of noUrls.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        const [pathPart = '', anchor] = (m[1] ?? '').split('#', 2);
        if (/^[a-z][\w+.-]*:/i.test(pathPart)) continue; // mailto: and the like
        const target = pathPart === '' ? file : resolve(dirname(file), pathPart);
        if (!existsSync(target)) {
          add(line, 'missing-path', pathPart);
          continue;
        }
        if (anchor !== undefined && target.endsWith('.md') && !anchorsOf(target).has(anchor)) {
          add(line, 'missing-anchor', m[1] ?? '');
        }
      }
      // Bare and backticked repo paths (globs allowed), outside link targets.
      const withoutLinks = noUrls.replace(/\]\([^)]*\)/g, ']');
      for (const m of withoutLinks.matchAll(pathPattern)) {
        const cited = (m[1] ?? '').replace(/[.,;:]+$/, '');
        if (!existsOrMatches(absRoot, cited)) add(line, 'missing-path', cited);
      }
      // Bare §Heading references to this file (not after a docs path, handled above).
      for (const m of withoutLinks.matchAll(/(?<!\.md\s{0,3})§([A-Za-z][^)`,;.*]*)/g)) {
        if (!hasSection(anchorsOf(file), m[1] ?? '')) add(line, 'missing-anchor', `§${m[1] ?? ''}`.trim());
      }
    });
  }
  return findings.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
}

/** GitHub's heading slug: lower case, keep letters/digits/space/`-`/`_`, spaces → `-`. */
export function slugOf(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Every anchor a markdown text defines: heading slugs (with `-1`, `-2` for repeats) and `<a id|name>`. */
function anchorsIn(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of text.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    if (fenced) continue;
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      const base = slugOf(heading[1] ?? '');
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      anchors.add(count === 0 ? base : `${base}-${count}`);
    }
    for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1] ?? '');
  }
  return anchors;
}

/**
 * A `§` reference holds when its first word is a heading's number (`§6` → "## 6. Limits …") or
 * the first word of a heading after its number (`§check`, `§Invariants` → "## 3. Invariants and
 * why they hold"). Only the first word: the reference runs on into prose ("§Encoding gives …").
 */
function hasSection(anchors: Set<string>, reference: string): boolean {
  const first = slugOf(reference.trim()).split('-')[0] ?? '';
  return [...anchors].some((a) => {
    const [number, ...rest] = a.split('-');
    return number === first || (/^\d+$/.test(number ?? '') ? rest[0] === first : number === first);
  });
}

function repoPathPattern(topEntries: Set<string>): RegExp {
  const names = [...topEntries].map((n) => n.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|');
  // A top-level folder followed by `/…`, or a top-level file by itself; not inside a longer path or word.
  return new RegExp(`(?<![\\w./~@-])((?:${names})(?:/[\\w.*/-]*)?)(?![\\w-])`, 'g');
}

function existsOrMatches(root: string, cited: string): boolean {
  if (cited.includes('*')) return globSync(cited, { cwd: root }).length > 0;
  return existsSync(join(root, cited));
}

function* walk(dir: string): Generator<string> {
  for (const name of readdirSync(dir).sort()) {
    if (SKIPPED_DIRS.has(name) || SKIPPED_FILES.has(name)) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* walk(path);
    else if (name.endsWith('.md') || SOURCE_EXTENSIONS.some((e) => name.endsWith(e))) yield path;
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..');
  const findings = lintDocs(root);
  for (const f of findings) console.error(`${f.file}:${f.line}: ${f.rule}: ${f.cited}`);
  if (findings.length > 0) {
    console.error(`docs-lint: ${findings.length} broken citation(s); docs cite only repo paths that exist`);
    process.exit(1);
  }
}
