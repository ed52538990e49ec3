/**
 * scripts/run-tests.ts --unit (npm run test:unit): runs `*.test.ts` but not `*.int.test.ts`, with
 * no control plane, and a test that reaches for the control plane there fails with the naming
 * rule (test/helpers/tier.ts) instead of starting one. A skipped or todo test or suite fails the
 * run, named (the same code serves the full tier).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { requireIntegrationTier, requirePrerequisite, TIER_ENV } from '../helpers/tier.ts';

const runner = fileURLToPath(new URL('../../scripts/run-tests.ts', import.meta.url));
const tierModule = fileURLToPath(new URL('../helpers/tier.ts', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'run-tests-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Runs the unit tier on `globs`; the child gets no CP_* variables, nor NODE_TEST_CONTEXT (with it
 * node:test would take the child for a recursive run and skip its files).
 */
function unitTier(...globs: string[]): { status: number | null; out: string } {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('CP_') && k !== 'NODE_TEST_CONTEXT'),
  );
  const r = spawnSync(process.execPath, [runner, '--unit', ...globs], { encoding: 'utf8', env });
  return { status: r.status, out: r.stdout + r.stderr };
}

void describe('run-tests --unit', () => {
  void it('runs unit files and skips *.int.test.ts', () => {
    writeFileSync(join(dir, 'ok.test.ts'), "import { test } from 'node:test';\ntest('unit ok', () => {});\n");
    writeFileSync(
      join(dir, 'needs.int.test.ts'),
      "import { test } from 'node:test';\ntest('int ran', () => { throw new Error('ran'); });\n",
    );
    const r = unitTier(join(dir, '*.test.ts'));
    assert.equal(r.status, 0, r.out);
    assert.match(r.out, /unit tier: 1 files/);
    assert.match(r.out, /unit ok/);
    assert.doesNotMatch(r.out, /int ran/);
  });

  void it('fails a misnamed test that needs the control plane, naming the rule', () => {
    writeFileSync(
      join(dir, 'misnamed.test.ts'),
      `import { test } from 'node:test';\nimport { requireIntegrationTier } from ${JSON.stringify(tierModule)};\n` +
        "test('wants the API server', () => requireIntegrationTier('the control plane'));\n",
    );
    const r = unitTier(join(dir, 'misnamed.test.ts'));
    assert.equal(r.status, 1, r.out);
    assert.match(
      r.out,
      /this test needs the control plane, so it is not a unit test: name its file \*\.int\.test\.ts/,
    );
  });

  void it('exits 1 when only integration files match (a typo must not pass as green)', () => {
    const r = unitTier(join(dir, 'needs.int.test.ts'));
    assert.equal(r.status, 1);
    assert.match(r.out, /no unit test file matches/);
  });

  void it('fails a run that skips, naming each skipped or todo test and suite with its reason', () => {
    writeFileSync(
      join(dir, 'skips.test.ts'),
      "import { describe, test } from 'node:test';\n" +
        "test('ran', () => {});\n" +
        "test('needs a tool', { skip: 'tool missing' }, () => {});\n" +
        "test('later', { todo: true }, () => {});\n" +
        "describe('a suite', { skip: 'no ptp' }, () => { test('inner', () => {}); });\n",
    );
    const r = unitTier(join(dir, 'skips.test.ts'));
    assert.equal(r.status, 1, r.out);
    assert.match(r.out, /run-tests: 3 skipped or todo, which fails the run/);
    assert.match(r.out, /skips\.test\.ts:3 needs a tool: skipped \(tool missing\)/);
    assert.match(r.out, /skips\.test\.ts:4 later: todo\n/);
    assert.match(r.out, /skips\.test\.ts:5 a suite: skipped \(no ptp\)/);
  });

  void it('requirePrerequisite names what is missing and how to get it', () => {
    assert.throws(
      () => requirePrerequisite(join(dir, 'ptp'), 'Debian ptp 1.1.1', 'scripts/setup.sh installs it'),
      {
        message: `missing prerequisite: Debian ptp 1.1.1 (no executable ${join(dir, 'ptp')}); scripts/setup.sh installs it`,
      },
    );
    assert.doesNotThrow(() => requirePrerequisite(process.execPath, 'node', ''));
  });

  void it('requireIntegrationTier passes outside the unit tier', () => {
    const saved = process.env[TIER_ENV];
    delete process.env[TIER_ENV];
    try {
      assert.doesNotThrow(() => requireIntegrationTier('the control plane'));
    } finally {
      if (saved !== undefined) process.env[TIER_ENV] = saved;
    }
  });
});
