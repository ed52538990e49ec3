// ESLint flat config: typescript-eslint's recommended type-checked rules over the whole tree.
import { spawnSync } from 'node:child_process';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * scripts/docs-lint.ts as a lint rule, so `eslint .` (the integration check everyone runs) fails on
 * a broken or outside citation too. It runs once per eslint run, on the script's own file, with the
 * project's Node 24 (eslint itself may run on an older Node that cannot load TypeScript).
 */
const docsLint = {
  meta: { type: 'problem', schema: [] },
  create(context) {
    return {
      Program(node) {
        const run = spawnSync('node_modules/.bin/node', ['scripts/docs-lint.ts'], {
          cwd: import.meta.dirname,
          encoding: 'utf8',
        });
        if (run.status === 0) return;
        const lines = (run.stderr || run.error?.message || 'docs-lint did not run').trim().split('\n');
        for (const line of lines.filter((l, i) => i === 0 || !l.startsWith('docs-lint:')))
          context.report({ node, message: `docs-lint: ${line}` });
      },
    };
  },
};

export default tseslint.config(
  { ignores: ['dist/', 'build/', 'node_modules/', '**/*.generated.js', '**/*.generated.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      // node:test's describe/test return promises the runner itself awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite'] },
          ],
        },
      ],
    },
  },
  {
    files: ['scripts/docs-lint.ts'],
    plugins: { blockipam: { rules: { 'docs-lint': docsLint } } },
    rules: { 'blockipam/docs-lint': 'error' },
  },
  {
    files: ['**/*.js'],
    extends: [tseslint.configs.disableTypeChecked],
  },
);
