/**
 * scripts/setup.sh sourced under `set -euo pipefail`, as scripts/test.sh and scripts/demo.sh do:
 * a failing step stops the caller with that step's exit status after one line naming the step,
 * the command and its line in setup.sh; a clean run hands the caller back its own ERR trap. It
 * runs in a copy of the repo's layout whose build scripts (each `bash …` line of setup.sh) are
 * stubs that exit 0 or 3, with node_modules present (no npm ci) and the stub apt-get and id
 * (test/helpers/build-toolchain.ts) on PATH, so missing system packages "install" at once.
 */
import assert from 'node:assert/strict';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runScript, stubToolchainEnv, type ScriptRun } from '../helpers/build-toolchain.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const setupLines = readFileSync(join(root, 'scripts', 'setup.sh'), 'utf8').split('\n');

/** A `bash SCRIPT …` line of setup.sh: the script, its 1-based line and the step it is in. */
interface SetupCall {
  readonly script: string;
  readonly line: number;
  readonly step: string;
}
const calls: SetupCall[] = [];
let step = '';
for (const [i, text] of setupLines.entries()) {
  step = /^setup_step "([^"]+)"/.exec(text)?.[1] ?? step;
  const script = /^bash (\S+\.sh)/.exec(text)?.[1];
  if (script) calls.push({ script, line: i + 1, step });
}

/**
 * Sources a copy of setup.sh from a caller under `set -euo pipefail` that prints "after setup"
 * and the ERR trap it then has.
 * @param failing the setup call whose script exits 3 (none: all exit 0)
 * @param callerTrap the caller's ERR trap command, set before it sources setup.sh
 */
async function sourceSetup(failing: string | undefined, callerTrap: string | undefined): Promise<ScriptRun> {
  const tree = mkdtempSync(join(tmpdir(), 'bipam-setup-'));
  try {
    mkdirSync(join(tree, 'scripts'));
    copyFileSync(join(root, 'scripts', 'setup.sh'), join(tree, 'scripts', 'setup.sh'));
    mkdirSync(join(tree, 'node_modules', '.bin'), { recursive: true });
    writeFileSync(join(tree, 'node_modules', '.bin', 'node'), '#!/bin/sh\n', { mode: 0o755 });
    writeFileSync(join(tree, 'package-lock.json'), '{}');
    utimesSync(join(tree, 'package-lock.json'), 0, 0); // older than node_modules: no npm ci
    writeFileSync(join(tree, 'node_modules', '.package-lock.json'), '{}');
    for (const c of calls) {
      mkdirSync(join(tree, dirname(c.script)), { recursive: true });
      writeFileSync(join(tree, c.script), c.script === failing ? 'exit 3\n' : 'exit 0\n');
    }
    const caller = join(tree, 'caller.sh');
    writeFileSync(
      caller,
      [
        'set -euo pipefail',
        `cd ${JSON.stringify(tree)}`,
        callerTrap === undefined ? '' : `trap ${JSON.stringify(callerTrap)} ERR`,
        'source scripts/setup.sh',
        'echo "after setup, ERR trap: $(trap -p ERR)"',
      ].join('\n'),
    );
    const log = join(tree, 'calls.log');
    writeFileSync(log, '');
    return await runScript(caller, [], { ...process.env, ...stubToolchainEnv(log), HOME: tree });
  } finally {
    rmSync(tree, { recursive: true, force: true });
  }
}

void describe('scripts/setup.sh sourced under set -e', () => {
  void it('runs at least one build script (the cases below are not empty)', () => {
    assert.ok(calls.length > 0 && calls.every((c) => c.step !== ''), JSON.stringify(calls));
  });

  for (const c of calls)
    // the caller stops with the step's status and a line naming step, command and line
    void it(`${c.script} exits 3: the caller exits 3 naming step "${c.step}" and line ${c.line}`, async () => {
      const r = await sourceSetup(c.script, undefined);
      assert.equal(r.status, 3, r.stderr);
      assert.doesNotMatch(r.stdout, /after setup/);
      const said = r.stderr.trimEnd().split('\n').at(-1) ?? '';
      assert.ok(
        said.startsWith(`setup: step "${c.step}" failed: \`bash ${c.script}`) &&
          said.endsWith(`\` exited 3 (scripts/setup.sh line ${c.line})`),
        said,
      );
    });

  // a clean run: the caller goes on with its own ERR trap back
  void it('nothing fails: the caller goes on, with its own ERR trap back', async () => {
    const r = await sourceSetup(undefined, 'echo caller-trap >&2');
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^after setup, ERR trap: trap -- 'echo caller-trap >&2' ERR$/m);
  });

  // a clean run: no ERR trap is left behind where the caller had none
  void it('nothing fails: a caller without an ERR trap is left without one', async () => {
    const r = await sourceSetup(undefined, undefined);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^after setup, ERR trap: $/m);
  });
});
