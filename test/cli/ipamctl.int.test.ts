// ipamctl's dispatcher and executable (cli/ipamctl.ts, cli/main.ts): bad flags (clear message,
// exit 2, nothing changed), --help on every command, the real executable's exit code.
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import type { KubeDatastore } from 'blockipam/core/kube';
import { controlPlane } from '../helpers/control-plane.ts';
import { adminHooks, ipamctl } from './cluster.ts';

const main = fileURLToPath(new URL('../../cli/main.ts', import.meta.url));
let ds: KubeDatastore;

describe('ipamctl dispatcher: usage, help, the executable (real API server)', () => {
  adminHooks((d) => (ds = d));

  const badFlags: [string[], RegExp][] = [
    [['check', '--bogus'], /^ipamctl: unknown flag --bogus\. Run "ipamctl check --help" for usage\.\n$/],
    [
      ['check', '--limit', '-1'],
      /--limit must be an integer ≥ 0 \(0 = all\), not "-1"\nRun "ipamctl check --help"/,
    ],
    [['check', '--limit', 'abc'], /--limit must be an integer ≥ 0 \(0 = all\), not "abc"/],
    [
      ['check', '--request-timeout', '-1'],
      /--request-timeout must be an integer from 1 to 86400 \(seconds\), not "-1"/,
    ],
    [
      ['check', '--request-timeout', 'abc'],
      /--request-timeout must be an integer from 1 to 86400 \(seconds\), not "abc"/,
    ],
    [['show', '--request-timeout', '0'], /--request-timeout must be an integer from 1 to 86400/],
    [
      ['pool', 'create', 'x', '--cidr', '10.1.0.0/16', '--block-size', 'abc'],
      /--block-size must be an integer \(a prefix length\), not "abc"/,
    ],
    [
      ['pool', 'create', 'x', '--cidr', '10.1.0.0/16', '--block-size', '26.5'],
      /--block-size must be an integer/,
    ],
    [['frobnicate'], /Unknown argument: frobnicate\nRun "ipamctl --help" for usage\./],
    [['pool', 'frobnicate'], /Run "ipamctl pool --help" for usage\./],
    [['pool', 'create', 'x', '--bogus'], /Run "ipamctl pool create --help" for usage\./],
    [
      ['check', '--bogus-flag'],
      /^ipamctl: unknown flag --bogus-flag\. Run "ipamctl check --help" for usage\.\n$/,
    ],
    [['check', '--context', 'nope'], /context "nope" is not found in kubeconfig .*\(contexts: /],
    [[], /Name a command/],
    [['release'], /Give --from-report FILE… or --ip ADDRESS\./],
    [['release', '--ip', 'not-an-ip', '--yes'], /"not-an-ip" is not an IP address/],
    [['release', '--ip', '10.0.0.1', '--from-report', 'x.json'], /mutually exclusive/],
    [['show', '-o', 'xml'], /Invalid values:[\s\S]*Argument: output, Given: "xml"/],
    // the audit would run, then write no report (empty) or fail at the write (a directory)
    [['check', '-o', ''], /-o\/--output needs a FILE to write the report to/],
    // a name no IPPool or Node can have: `p/status` reached pool p's status subresource
    [['pool', 'delete', 'p/status', '--yes'], /NAME "p\/status" is not a valid IPPool name/],
    [['pool', 'disable', 'p/status'], /NAME "p\/status" is not a valid IPPool name/],
    [['pool', 'enable', ''], /NAME "" is not a valid IPPool name/],
    [['show', '--node', 'Ünïcode'], /--node "Ünïcode" is not a Kubernetes node name/],
    // yargs put a flag's default in for one given without a value
    [['check', '--limit', '--context', 'x'], /--limit must be an integer ≥ 0 \(0 = all\), not ""/],
    [
      ['check', '--request-timeout', '--context', 'x'],
      /--request-timeout must be an integer from 1 to 86400/,
    ],
    [['check', '-o', tmpdir()], /-o\/--output ".*" is a directory: name a FILE in it/],
    [
      ['pool', 'create', 'bad', '--cidr', '10.1.0.1/16'],
      /--cidr "10\.1\.0\.1\/16": host bits are set: the network is 10\.1\.0\.0\/16/,
    ],
    [['pool', 'create', 'bad'], /Missing required argument: cidr/],
    [['config', 'set', 'colour=blue'], /"colour=blue": want KEY=VALUE with KEY one of strictAffinity/],
    [
      ['config', 'set', 'maxBlocksPerNode=-3'],
      /maxBlocksPerNode must be a whole number from 1 to 10000 \(IPAMConfig spec.maxBlocksPerNode\)/,
    ],
  ];
  for (const [args, message] of badFlags) {
    test(`bad usage "${args.join(' ')}": exit 2, clear message, nothing created`, async () => {
      const out = await ipamctl(args);
      assert.equal(out.code, 2, out.stdout);
      assert.match(out.stderr, message);
      assert.deepEqual(await ds.pools.list(), []);
      assert.equal(await ds.configs.get('default'), undefined);
    });
  }

  test('--help on every command shows its examples and exits 0', async () => {
    for (const command of [
      ['check'],
      ['release'],
      ['show'],
      ['pool', 'create'],
      ['pool', 'list'],
      ['pool', 'disable'],
      ['pool', 'delete'],
      ['config', 'get'],
      ['config', 'set'],
      ['repair', 'sequence'],
    ]) {
      const out = await ipamctl([...command, '--help']);
      assert.equal(out.code, 0, command.join(' '));
      assert.match(out.stdout, /Examples:\n {2}ipamctl /, command.join(' '));
    }
  });

  test('the executable: node cli/main.ts check sets the process exit code', () => {
    const ok = spawnSync(process.execPath, [main, 'check', '--kubeconfig', controlPlane().adminKubeconfig], {
      encoding: 'utf8',
    });
    assert.equal(ok.status, 0, ok.stderr);
    assert.match(ok.stdout, /Check complete: no problems found\./);
    const bad = spawnSync(process.execPath, [main, 'check', '--nope'], { encoding: 'utf8' });
    assert.equal(bad.status, 2);
  });
});
