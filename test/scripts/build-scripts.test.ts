/**
 * The build scripts the setup path runs (scripts/setup.sh, sourced under `set -e` by
 * scripts/test.sh and scripts/demo.sh) and every other build script: each run with an empty cache
 * (BLOCKIPAM_CACHE) and the stub toolchain (test/helpers/build-toolchain.ts), twice. The first run
 * takes the first-build branch, the second the cached one; both must exit 0 and print their
 * KEY=VALUE lines, and the second must build nothing. build-promtool.sh used to exit 1 after
 * "promtool … built", its first-build branch only, which stopped setup.sh without a word.
 * And with a failing toolchain each must exit non-zero and pass the failure's words on.
 *
 * The scripts are found, not listed: test/tools/build-*.sh, test/*\/build.sh, scripts/build-*.sh
 * and whatever scripts/setup.sh runs with `bash`, with the arguments setup.sh gives it.
 */
import assert from 'node:assert/strict';
import { existsSync, globSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { buildCalls, runScript, stubToolchainEnv, type ScriptRun } from '../helpers/build-toolchain.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const GLOBS = ['test/tools/build-*.sh', 'test/*/build.sh', 'scripts/build-*.sh'];

/** script → its arguments: setup.sh's `bash PATH ARGS` lines, then the globs' scripts (no arguments). */
function buildScripts(): Map<string, string[]> {
  const setup = readFileSync(join(root, 'scripts', 'setup.sh'), 'utf8');
  const scripts = new Map<string, string[]>();
  for (const [, script = '', args = ''] of setup.matchAll(/^bash (\S+\.sh)([^>\n]*)/gm))
    scripts.set(script, args.trim().split(/\s+/).filter(Boolean));
  for (const f of globSync(GLOBS, { cwd: root }).sort()) if (!scripts.has(f)) scripts.set(f, []);
  return scripts;
}

/** A fresh cache, home and call log, and the environment that points a script at them. */
function sandbox(extra: NodeJS.ProcessEnv = {}): { env: NodeJS.ProcessEnv; log: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'bipam-build-scripts-'));
  const log = join(dir, 'calls.log');
  writeFileSync(log, '');
  const env = {
    ...process.env,
    ...stubToolchainEnv(log),
    HOME: dir,
    BLOCKIPAM_CACHE: join(dir, 'cache'),
    XDG_CACHE_HOME: undefined,
    ...extra,
  };
  return { env, log, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Exit 0 and at least one KEY=VALUE line, every line one, every absolute path in them present. */
function assertBuilt(r: ScriptRun, what: string): void {
  const said = `${what}:\n--- stdout\n${r.stdout}--- stderr\n${r.stderr}`;
  assert.equal(r.status, 0, `exit ${r.status ?? r.signal}, ${said}`);
  const lines = r.stdout.split('\n').filter(Boolean);
  assert.ok(lines.length > 0, `no KEY=VALUE on stdout, ${said}`);
  for (const line of lines) {
    const value = /^[A-Z][A-Z0-9_]*=(\S+)$/.exec(line)?.[1];
    assert.ok(value, `not a KEY=VALUE line with a value: ${JSON.stringify(line)}, ${said}`);
    if (isAbsolute(value)) assert.ok(existsSync(value), `${line}: no such path, ${said}`);
  }
}

for (const [script, args] of buildScripts()) {
  const path = join(root, script);
  void describe(`${script} ${args.join(' ')}`.trim(), () => {
    void it('builds into an empty cache and exits 0, then reuses the cache and exits 0', async () => {
      const box = sandbox();
      try {
        const first = await runScript(path, args, box.env);
        assertBuilt(first, 'first run (empty cache)');
        const built = buildCalls(box.log);
        assert.ok(built.length > 0, 'the first run built nothing: the stub toolchain was not used');
        const second = await runScript(path, args, box.env);
        assertBuilt(second, 'second run (cached)');
        assert.deepEqual(buildCalls(box.log).slice(built.length), [], 'the cached run built again');
        assert.equal(second.stdout, first.stdout);
      } finally {
        box.remove();
      }
    });

    void it('exits non-zero with the failure on stderr when the toolchain fails', async () => {
      const box = sandbox({ STUB_FAIL: '1' });
      try {
        const r = await runScript(path, args, box.env);
        assert.notEqual(r.status, 0, `exit 0 after a failed build:\n${r.stdout}${r.stderr}`);
        assert.match(r.stderr, /the stub toolchain was told to fail/);
      } finally {
        box.remove();
      }
    });
  });
}
