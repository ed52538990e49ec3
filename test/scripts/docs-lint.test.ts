/**
 * scripts/docs-lint.ts on a throw-away repo in a temp dir: each broken citation is one finding
 * naming the file, line, rule and the text cited; what exists passes.
 * docs-lint: ignore-file (the fixtures below spell out the citations the lint refuses)
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { lintDocs, slugOf } from '../../scripts/docs-lint.ts';

const roots: string[] = [];
after(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

/** A repo with `core/a.ts`, `docs/note.md` (headings "Intro", "## 2. Report format (`-o FILE`)") and the given files. */
function repo(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'docs-lint-'));
  roots.push(root);
  const all: Record<string, string> = {
    'core/a.ts': 'export const a = 1;\n',
    'docs/note.md': '# Note\n\n## Intro\n\n## 2. Report format (`-o FILE`)\n\n## Intro\n',
    ...files,
  };
  for (const [path, text] of Object.entries(all)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

const brief = (root: string): string[] =>
  lintDocs(root).map((f) => `${f.file}:${f.line} ${f.rule} ${f.cited}`);

void describe('docs-lint', () => {
  void it('passes citations that exist: paths, globs, links, anchors, repeated headings, § sections', () => {
    const root = repo({
      'README.md': [
        'See `core/a.ts`, core/ and `core/*.ts`; [the note](docs/note.md#intro), [again](docs/note.md#intro-1).',
        '[format](docs/note.md#2-report-format--o-file), docs/note.md §Report, docs/note.md §2, [up](#readme).',
        'Outside the repo layout: `build/plugin/x`, https://example.com/core/missing.ts, ~/.cache/x, /etc/cni.',
        '<a id="readme"></a>',
      ].join('\n'),
      'core/b.ts': '// see docs/note.md#intro and docs/note.md §Intro; lib/ipam/DESIGN.md is upstream\n',
    });
    assert.deepEqual(brief(root), []);
  });

  void it('names a repo path that does not exist, in a link, in backticks or bare', () => {
    const root = repo({
      'docs/x.md':
        '# X\n\n[gone](../core/gone.ts) and `core/missing.ts`\nbare cli/nope.ts, glob `core/*.js`.\n',
    });
    assert.deepEqual(brief(root), [
      'docs/x.md:3 missing-path ../core/gone.ts',
      'docs/x.md:3 missing-path core/missing.ts',
      'docs/x.md:4 missing-path cli/nope.ts',
      'docs/x.md:4 missing-path core/*.js',
    ]);
  });

  void it('names an anchor or § section that no heading defines, in markdown and in source', () => {
    const root = repo({
      'docs/x.md':
        '# X\n\n[a](note.md#outro) [b](#nowhere) [c](#x)\nsee §Nothing here, docs/note.md §Appendix\n',
      'core/c.ts': '/** docs/note.md#gone, docs/note.md §Missing section */\n',
    });
    assert.deepEqual(brief(root), [
      'core/c.ts:1 missing-anchor docs/note.md#gone',
      'core/c.ts:1 missing-anchor docs/note.md §Missing section',
      'docs/x.md:3 missing-anchor note.md#outro',
      'docs/x.md:3 missing-anchor #nowhere',
      'docs/x.md:4 missing-anchor docs/note.md §Appendix',
      'docs/x.md:4 missing-anchor §Nothing here',
    ]);
  });

  void it('names every citation of a file outside the repo, in docs and in source comments', () => {
    const root = repo({
      'docs/x.md': '# X\n\nSee ../shared/DESIGN.md and DESIGN §4, shared/research/cni-spec.md.\n',
      'core/d.ts': '// CONVENTIONS §5; research/calico-ipam.md; /work/shared/x; cni-spec §5.6\n',
      'scripts/e.sh': '# Recipe: /work/notes.md\n',
    });
    assert.deepEqual(brief(root), [
      'core/d.ts:1 outside-citation /work/shared/x',
      'core/d.ts:1 outside-citation research/calico-ipam.md',
      'core/d.ts:1 outside-citation cni-spec §5.6',
      'core/d.ts:1 outside-citation CONVENTIONS §5',
      'docs/x.md:3 outside-citation ../shared/DESIGN.md',
      'docs/x.md:3 outside-citation shared/research/cni-spec.md',
      'docs/x.md:3 outside-citation DESIGN §4',
      'scripts/e.sh:1 outside-citation /work/notes.md',
    ]);
  });

  void it('accepts a relative import of a repo folder named shared (block-controller/shared/)', () => {
    const root = repo({
      'block-controller/shared/index.ts': 'export {};\n',
      'block-controller/controller/run.ts': "import {} from '../shared/index.ts';\n// ../shared/missing.ts\n",
    });
    assert.deepEqual(brief(root), [
      'block-controller/controller/run.ts:2 outside-citation ../shared/missing.ts',
    ]);
  });

  void it('accepts DESIGN.md once the repo holds one; skips node_modules and marked files', () => {
    const root = repo({
      'DESIGN.md': '# Design\n',
      'docs/x.md': '# X\n\nSee DESIGN.md.\n',
      'node_modules/p/README.md': 'see ../shared/x and core/none.ts\n',
      'core/f.ts': '// docs-lint: ignore-file\n// ../shared/x\n',
    });
    assert.deepEqual(brief(root), []);
  });

  void it('slugs headings as GitHub does', () => {
    assert.equal(slugOf('Report format (`-o FILE`)'), 'report-format--o-file');
    assert.equal(slugOf('4. Public API (core/index.ts)'), '4-public-api-coreindexts');
    assert.equal(slugOf('Runtime: a Bun-compiled executable'), 'runtime-a-bun-compiled-executable');
  });
});
