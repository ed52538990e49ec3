/**
 * scripts/coverage-summary.ts: tallies c8's json-summary by top-level folder, lists the files no
 * test loaded, and leaves type-only files out of every figure.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { format, summarise, typeOnlySource, type FileSummary } from '../../scripts/coverage-summary.ts';

const lines = (covered: number, total: number): FileSummary => ({ lines: { covered, total } });

void describe('coverage-summary', () => {
  void it('tallies by top-level folder, lists 0 % files and leaves type-only ones out', () => {
    const s = summarise(
      {
        total: lines(999, 999), // istanbul's own total: ignored
        '/r/core/a.ts': lines(8, 10),
        '/r/core/b/c.ts': lines(0, 5), // never loaded
        '/r/cli/main.ts': lines(3, 4),
        '/r/core/types.ts': lines(0, 30), // type-only: not counted
      },
      '/r',
      (p) => p.endsWith('types.ts'),
    );
    assert.deepEqual(s.total, { covered: 11, total: 19, files: 3 });
    assert.deepEqual(
      [...s.folders],
      [
        ['cli', { covered: 3, total: 4, files: 1 }],
        ['core', { covered: 8, total: 15, files: 2 }],
      ],
    );
    assert.deepEqual(s.uncovered, ['core/b/c.ts']);
    assert.deepEqual(s.typeOnly, ['core/types.ts']);
    const text = format(s);
    assert.match(text, /total\s+57\.9 %\s+11\/19 lines, 3 files/);
    assert.match(text, /core\/\s+53\.3 %\s+8\/15 lines, 2 files/);
    assert.match(text, /files at 0 % \(1\):\n {2}core\/b\/c\.ts/);
  });

  const cases: [string, string, boolean][] = [
    // interfaces, type aliases and type imports only: nothing runs
    [
      'types',
      "import type { A } from './a.ts';\n/** doc */\nexport interface B { a: A }\nexport type C = B;\n",
      true,
    ],
    // a type re-export leaves an empty export list behind
    ['re-export', "// note\nexport type { A } from './a.ts';\n", true],
    // one constant is code
    ['constant', 'export interface B { a: number }\nexport const b: B = { a: 1 };\n', false],
    // a side-effect import is code
    ['import', "import './a.ts';\n", false],
  ];
  for (const [name, source, expected] of cases) {
    void it(`typeOnlySource: ${name}`, () => assert.equal(typeOnlySource(source), expected));
  }
});
