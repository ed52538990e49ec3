// The import-boundary rules of eslint.config.js, on one import each: core's rooms import only the
// rooms below them, core imports nothing outside core/, no part imports cmd/ or another part's
// internals, and a part reaches core only through its exports.
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { describe, test } from 'node:test';
import { Linter } from 'eslint';
import type { ESLint, Linter as LinterTypes } from 'eslint';

// eslint.config.js is plain JavaScript without types: imported by a path TypeScript does not follow
const configFile = '../../eslint.config.js';
const { blockipam } = (await import(configFile)) as { blockipam: ESLint.Plugin };

const root = resolve(import.meta.dirname, '../..');
const linter = new Linter({ configType: 'flat' });
const config: LinterTypes.Config = {
  files: ['**/*.ts'],
  plugins: { blockipam },
  rules: {
    'blockipam/core-entries': 'error',
    'blockipam/core-rooms': 'error',
    'blockipam/part-boundaries': 'error',
  },
};

/** The rules that report `import '<source>'` written in `file` (relative to the repository). */
const reported = (file: string, source: string): string[] =>
  linter
    .verify(`import x from '${source}';\nexport default x;\n`, [config], { filename: resolve(root, file) })
    .map((m) => m.ruleId ?? m.message);

describe('eslint import boundaries', () => {
  const cases: [string, string, string[]][] = [
    // a room below may be imported
    ['core/allocator/a.ts', '../block/block.ts', []],
    // a room above may not
    ['core/block/a.ts', '../allocator/auto-assign.ts', ['blockipam/core-rooms']],
    ['core/datastore/a.ts', '../node-ipam/service.ts', ['blockipam/core-rooms']],
    // adoption sits on the allocator and the datastore port, below the CNI layer that reads the store
    ['core/adopt/a.ts', '../allocator/pools.ts', []],
    ['core/adopt/a.ts', '../datastore/datastore.ts', []],
    ['core/adopt/a.ts', '../cni/host-local-store.ts', ['blockipam/core-rooms']],
    ['core/cni/a.ts', '../adopt/host-local-file.ts', []],
    // core's top-level files are open to every room
    ['core/address/a.ts', '../resources.ts', []],
    // core imports nothing outside core/ but package.json
    ['core/a.ts', '../test/core/fixtures.ts', ['blockipam/part-boundaries']],
    ['core/a.ts', '../package.json', []],
    // no part imports cmd/
    ['core/a.ts', '../cmd/role.ts', ['blockipam/part-boundaries']],
    ['block-controller/agent/a.ts', '../../cmd/role.ts', ['blockipam/part-boundaries']],
    // nor another part's internals
    ['cli/a.ts', '../block-controller/agent/agent.ts', ['blockipam/part-boundaries']],
    // core through its exports only
    ['block-controller/a.ts', '../core/allocator/claim.ts', ['blockipam/core-entries']],
    // cmd/ wires the parts
    ['cmd/a.ts', '../cli/ipamctl.ts', []],
  ];
  for (const [file, source, rules] of cases)
    test(`${file} imports ${source}: ${rules.join(', ') || 'allowed'}`, () =>
      assert.deepEqual(reported(file, source), rules));
});
