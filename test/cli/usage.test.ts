// ipamctl's answers that need no cluster (cli/ipamctl.ts): `--version` prints `ipamctl <version>`
// once, as every role of the image answers it (core/version.ts); an unknown flag is one line
// naming the flag as typed, with the help hint, exit 2 (docs/design-cli.md §Exit codes) — it was
// yargs' "Unknown argument: bogus" without the dashes, and a second line.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { run } from '../../cli/ipamctl.ts';
import { VERSION } from 'blockipam/core/version';

async function ipamctl(argv: readonly string[]) {
  let stdout = '';
  let stderr = '';
  const code = await run({
    argv,
    env: {},
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
  });
  return { code, stdout, stderr };
}

test('--version prints "ipamctl <version>" once on stdout, exit 0', async () => {
  assert.deepEqual(await ipamctl(['--version']), { code: 0, stdout: `ipamctl ${VERSION}\n`, stderr: '' });
});

describe('an unknown flag: one line naming it as typed, exit 2', () => {
  const cases: [string[], string][] = [
    // a long flag, at the top and under a command (the hint names the deepest real command)
    [['--bogus'], 'ipamctl: unknown flag --bogus. Run "ipamctl --help" for usage.'],
    [
      ['pool', 'create', 'x', '--cidr', '10.0.0.0/16', '--frob'],
      'ipamctl: unknown flag --frob. Run "ipamctl pool create --help" for usage.',
    ],
    // with a value, a short one, and two at once
    [['show', '--bogus=3'], 'ipamctl: unknown flag --bogus. Run "ipamctl show --help" for usage.'],
    [['check', '-x'], 'ipamctl: unknown flag -x. Run "ipamctl check --help" for usage.'],
    [
      ['check', '--bogus', '--other'],
      'ipamctl: unknown flags --bogus, --other. Run "ipamctl check --help" for usage.',
    ],
    // --version is the top level's only argument, not a flag of a command
    [['show', '--version'], 'ipamctl: unknown flag --version. Run "ipamctl show --help" for usage.'],
  ];
  for (const [argv, line] of cases)
    test(argv.join(' '), async () => {
      assert.deepEqual(await ipamctl(argv), { code: 2, stdout: '', stderr: `${line}\n` });
    });

  test('an unknown command is not a flag: yargs message and the hint, exit 2', async () => {
    const out = await ipamctl(['frobnicate']);
    assert.equal(out.code, 2);
    assert.equal(out.stderr, 'ipamctl: Unknown argument: frobnicate\nRun "ipamctl --help" for usage.\n');
  });
});
