// ipamctl's answers that need no cluster (cli/ipamctl.ts, cli/command.ts): `--version`, `--help`
// on every command, and input it can check itself refused before any request (fresh tester: `show
// --node` without a value queried node "" and exited 0; `config set maxBlocksPerNode=0` and a bad
// pool went to the API server first) — bad values, an unknown flag (one line naming it as typed),
// an unknown command (listing the commands), a missing positional (naming it), each with the hint
// naming the deepest real command typed. The kubeconfig points at a loopback listener that counts
// connections: every refusal must exit 2 with a message naming the field, and open none.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { run } from '../../cli/ipamctl.ts';
import { VERSION } from 'blockipam/core/version';

let server: net.Server;
let connections = 0;
const dir = mkdtempSync(join(tmpdir(), 'blockipam-kubeconfig-'));
let kubeconfig = '';

/** A kubeconfig of one context; `current` false leaves current-context out. */
function writeKubeconfig(name: string, port: number, current: boolean): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: c, cluster: {server: "https://127.0.0.1:${port}", insecure-skip-tls-verify: true}}]`,
      'users: [{name: u, user: {token: t}}]',
      'contexts: [{name: only, context: {cluster: c, user: u}}]',
      ...(current ? ['current-context: only'] : []),
    ].join('\n'),
  );
  return path;
}

async function ipamctl(args: readonly string[], file: string | null = kubeconfig) {
  let stdout = '';
  let stderr = '';
  const code = await run({
    argv: file === null ? args : [...args, '--kubeconfig', file],
    env: {},
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
    sleep: () => Promise.resolve(),
  });
  return { code, stdout, stderr };
}

before(async () => {
  server = net.createServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  kubeconfig = writeKubeconfig('kubeconfig', (server.address() as AddressInfo).port, true);
});
after(() => {
  server.close();
  rmSync(dir, { recursive: true, force: true });
});

test('--version prints "ipamctl <version>" once on stdout, exit 0', async () => {
  assert.deepEqual(await ipamctl(['--version'], null), {
    code: 0,
    stdout: `ipamctl ${VERSION}\n`,
    stderr: '',
  });
});

test('--help on every command shows its examples and exits 0, without a request', async () => {
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
    ['adopt', 'plan'],
    ['adopt', 'finalize'],
  ]) {
    const out = await ipamctl([...command, '--help']);
    assert.equal(out.code, 0, command.join(' '));
    assert.match(out.stdout, /Examples:\n {2}ipamctl /, command.join(' '));
  }
  assert.equal(connections, 0);
});

describe('ipamctl: input checked before any request (exit 2, the field named)', () => {
  const cases: [string[], RegExp][] = [
    // an unknown flag: one line naming it as typed (yargs said "Unknown argument: bogus"), the hint
    // naming the deepest real command; with a value, a short one, two at once, a kebab-case one
    [['--bogus'], /^ipamctl: unknown flag --bogus\. Run "ipamctl --help" for usage\.\n$/],
    [
      ['pool', 'create', 'x', '--cidr', '10.0.0.0/16', '--frob'],
      /^ipamctl: unknown flag --frob\. Run "ipamctl pool create --help" for usage\.\n$/,
    ],
    [['show', '--bogus=3'], /^ipamctl: unknown flag --bogus\. Run "ipamctl show --help" for usage\.\n$/],
    [['check', '-x'], /^ipamctl: unknown flag -x\. Run "ipamctl check --help" for usage\.\n$/],
    [
      ['check', '--bogus', '--other'],
      /^ipamctl: unknown flags --bogus, --other\. Run "ipamctl check --help" for usage\.\n$/,
    ],
    [
      ['check', '--bogus-flag'],
      /^ipamctl: unknown flag --bogus-flag\. Run "ipamctl check --help" for usage\.\n$/,
    ],
    [['adopt', 'plan', '--bogus'], /Run "ipamctl adopt plan --help" for usage\./],
    [['adopt', 'finalize', '--node', 'x'], /unknown flag --node\. Run "ipamctl adopt finalize --help"/],
    [['adopt', 'finalize', '-o', 'csv'], /Invalid values:\n {2}Argument: output, Given: "csv"/],
    [['--context', 'x', 'show', '--bogus'], /Run "ipamctl show --help" for usage\./],
    // --version is the top level's only argument, not a flag of a command
    [['show', '--version'], /^ipamctl: unknown flag --version\. Run "ipamctl show --help" for usage\.\n$/],
    // an unknown command says so and lists the commands there are (yargs: "Unknown argument: frob")
    [
      ['frobnicate'],
      /^ipamctl: unknown command "frobnicate" \(commands: check, show, release, repair, pool, config, adopt\)\nRun "ipamctl --help" for usage\.\n$/,
    ],
    [['frobnicate', '--bogus'], /^ipamctl: unknown command "frobnicate" /],
    [
      ['pool', 'frobnicate'],
      /^ipamctl: unknown command "pool frobnicate" \(commands of pool: create, list, disable, enable, delete\)\nRun "ipamctl pool --help" for usage\.\n$/,
    ],
    [
      ['repair', 'frobnicate'],
      /unknown command "repair frobnicate" \(commands of repair: sequence\)\nRun "ipamctl repair --help"/,
    ],
    // a missing positional is named, with the usage line (yargs: "Not enough non-option arguments")
    [
      ['pool', 'create'],
      /^ipamctl: missing <name>: ipamctl pool create <name>\nRun "ipamctl pool create --help" for usage\.\n$/,
    ],
    [['pool', 'delete', '--yes'], /^ipamctl: missing <name>: ipamctl pool delete <name>\n/],
    [
      ['config', 'set'],
      /^ipamctl: missing <settings\.\.>: ipamctl config set <settings\.\.>\nRun "ipamctl config set --help"/,
    ],
    [
      ['repair', 'sequence'],
      /^ipamctl: missing <block>: ipamctl repair sequence <block>\nRun "ipamctl repair sequence --help"/,
    ],
    [
      ['pool'],
      /^ipamctl: missing <command>, one of create, list, disable, enable, delete: ipamctl pool <command>\nRun "ipamctl pool --help"/,
    ],
    [
      ['adopt'],
      /^ipamctl: missing <command>, one of plan, finalize: ipamctl adopt <command>\nRun "ipamctl adopt --help"/,
    ],
    [[], /Name a command/],
    [['pool', 'create', 'bad'], /Missing required argument: cidr/],
    // bad values, named
    [['show', '--node'], /Not enough arguments following: node/],
    [['show', '--node', ''], /--node needs a node name, not ""/],
    [['show', '--node', '  '], /--node needs a node name/],
    [['show', '--node', 'Ünïcode'], /--node "Ünïcode" is not a Kubernetes node name/],
    [['show', '--ip', ''], /--ip needs an address, not ""/],
    [['show', '-o', 'xml'], /Invalid values:[\s\S]*Argument: output, Given: "xml"/],
    [
      ['check', '--limit', '-1'],
      /--limit must be an integer ≥ 0 \(0 = all\), not "-1"\nRun "ipamctl check --help"/,
    ],
    [['check', '--limit', 'abc'], /--limit must be an integer ≥ 0 \(0 = all\), not "abc"/],
    // yargs put a flag's default in for one given without a value
    [['check', '--limit', '--context', 'x'], /--limit must be an integer ≥ 0 \(0 = all\), not ""/],
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
      ['check', '--request-timeout', '--context', 'x'],
      /--request-timeout must be an integer from 1 to 86400/,
    ],
    [['check', '--context', 'nope'], /context "nope" is not found in kubeconfig .*\(contexts: only\)/],
    // the audit would run, then write no report (empty) or fail at the write (a directory)
    [['check', '-o', ''], /-o\/--output needs a FILE to write the report to/],
    [['check', '-o', tmpdir()], /-o\/--output ".*" is a directory: name a FILE in it/],
    [['check', '--deletion-queue', ''], /--deletion-queue needs a directory/],
    [['check', '--deletion-queue', process.execPath], /--deletion-queue ".*" is not a directory/],
    [['release'], /Give --from-report FILE… or --ip ADDRESS\./],
    [['release', '--ip', '10.0.0.1', '--from-report', 'x.json'], /mutually exclusive/],
    [['release', '--ip', 'not-an-ip', '--yes'], /"not-an-ip" is not an IP address/],
    [
      ['config', 'set', 'maxBlocksPerNode=0'],
      /maxBlocksPerNode must be a whole number from 1 to 10000 \(IPAMConfig spec\.maxBlocksPerNode\), not "0"/,
    ],
    [['config', 'set', 'maxBlocksPerNode=-3'], /maxBlocksPerNode must be a whole number from 1 to 10000/],
    [['config', 'set', 'ipCooldownSeconds=3601'], /ipCooldownSeconds must be a whole number from 0 to 3600/],
    [
      ['config', 'set', 'minFreeAddressesPerNode=65537'],
      /minFreeAddressesPerNode must be a whole number from 0 to 65536/,
    ],
    [['config', 'set', 'strictAffinity=yes'], /strictAffinity must be true or false, not "yes"/],
    [['config', 'set', 'colour=blue'], /"colour=blue": want KEY=VALUE with KEY one of strictAffinity/],
    [
      ['pool', 'create', 'x', '--cidr', '10.1.0.0/16', '--block-size', 'abc'],
      /--block-size must be an integer \(a prefix length\), not "abc"/,
    ],
    [
      ['pool', 'create', 'x', '--cidr', '10.1.0.0/16', '--block-size', '26.5'],
      /--block-size must be an integer/,
    ],
    [
      ['pool', 'create', 'p', '--cidr', '10.1.0.0/16', '--block-size', '31'],
      /--block-size 31 is not allowed for IPv4: from 20 to 30/,
    ],
    [
      ['pool', 'create', 'p', '--cidr', 'fd00::/48', '--block-size', '26'],
      /--block-size 26 is not allowed for IPv6: from 116 to 126/,
    ],
    [
      ['pool', 'create', 'p', '--cidr', '10.1.0.0/28'],
      /--cidr 10\.1\.0\.0\/28 is smaller than one block \(--block-size 26\)/,
    ],
    // the part of the CIDR that is wrong, not "not a masked CIDR" for every fault
    [
      ['pool', 'create', 'p', '--cidr', '10.300.0.0/16'],
      /--cidr "10\.300\.0\.0\/16": 10\.300\.0\.0 is not a valid IPv4 address/,
    ],
    [
      ['pool', 'create', 'p', '--cidr', '10.1.0.0/33'],
      /--cidr "10\.1\.0\.0\/33": the prefix length "33" is not a whole number from 0 to 32 \(IPv4\)/,
    ],
    [['pool', 'create', 'p', '--cidr', '10.1.0.0'], /--cidr "10\.1\.0\.0": no "\/" and prefix length/],
    [
      ['pool', 'create', 'bad', '--cidr', '10.1.0.1/16'],
      /--cidr "10\.1\.0\.1\/16": host bits are set: the network is 10\.1\.0\.0\/16/,
    ],
    [['pool', 'create', 'Bad_Name', '--cidr', '10.1.0.0/16'], /NAME "Bad_Name" is not a valid IPPool name/],
    [['pool', 'create', 'x'.repeat(64), '--cidr', '10.1.0.0/16'], /is not a valid IPPool name: at most 63/],
    // a name no IPPool or Node can have: `p/status` reached pool p's status subresource
    [['pool', 'delete', 'p/status', '--yes'], /NAME "p\/status" is not a valid IPPool name/],
    [['pool', 'disable', 'p/status'], /NAME "p\/status" is not a valid IPPool name/],
    [['pool', 'enable', ''], /NAME "" is not a valid IPPool name/],
    [['repair', 'sequence', 'Bad_Name'], /BLOCK "Bad_Name" is neither an IPAMBlock name/],
    [['repair', 'sequence', '10.244.0.0/33'], /BLOCK "10\.244\.0\.0\/33" is neither an IPAMBlock name/],
    [['adopt', 'plan', '--node', 'Bad_Name'], /--node "Bad_Name" is not a Kubernetes node name/],
    [['adopt', 'plan', '--node', ''], /--node needs a node name, not ""/],
  ];
  for (const [args, message] of cases)
    test(`${args.join(' ')}`, async () => {
      const before = connections;
      const out = await ipamctl(args);
      assert.equal(out.code, 2, out.stdout + out.stderr);
      assert.match(out.stderr, message);
      assert.equal(out.stdout, '');
      assert.equal(connections, before, 'no request was sent');
    });

  test('a kubeconfig without current-context says so (it blamed the cluster server), exit 2', async () => {
    const port = (server.address() as AddressInfo).port;
    const out = await ipamctl(['pool', 'list'], writeKubeconfig('no-current', port, false));
    assert.equal(out.code, 2);
    assert.match(out.stderr, /sets no current-context: pass --context NAME .*\(contexts: only\)/);
    assert.doesNotMatch(out.stderr, /server/);
  });
});

// Every command that writes takes --yes (-y), as those that ask for it do: a script may pass it to
// each. Accepted means parsed: the run gets as far as the API server (the counting listener).
test('--yes is accepted by every command that writes', async () => {
  for (const args of [
    ['pool', 'create', 'p', '--cidr', '10.1.0.0/16', '--yes'],
    ['pool', 'disable', 'p', '--yes'],
    ['pool', 'enable', 'p', '-y'],
    ['pool', 'delete', 'p', '--yes'],
    ['config', 'set', 'strictAffinity=true', '--yes'],
    ['repair', 'sequence', '10.244.0.0/26', '--yes'],
    ['release', '--ip', '10.0.0.1', '--yes'],
  ]) {
    const before = connections;
    const out = await ipamctl(args);
    assert.doesNotMatch(out.stderr, /unknown flag|usage/, args.join(' '));
    assert.ok(connections > before, `${args.join(' ')}: ${out.stderr}`);
  }
});
