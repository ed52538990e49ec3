// ipamctl refuses input it can check itself before sending any request (fresh tester: `show
// --node` without a value queried node "" and exited 0; `config set maxBlocksPerNode=0` and a bad
// pool went to the API server first). The kubeconfig points at a loopback listener that counts
// connections: every case must exit 2 with a message naming the field, and open none.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { run } from '../../cli/ipamctl.ts';

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
      'clusters: [{name: c, cluster: {server: "http://127.0.0.1:' + String(port) + '"}}]',
      'users: [{name: u, user: {token: t}}]',
      'contexts: [{name: only, context: {cluster: c, user: u}}]',
      ...(current ? ['current-context: only'] : []),
    ].join('\n'),
  );
  return path;
}

async function ipamctl(args: readonly string[], file = kubeconfig) {
  let stdout = '';
  let stderr = '';
  const code = await run({
    argv: [...args, '--kubeconfig', file],
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

describe('ipamctl: input checked before any request (exit 2, the field named)', () => {
  const cases: [string[], RegExp][] = [
    [['show', '--node'], /Not enough arguments following: node/],
    [['show', '--node', ''], /--node needs a node name, not ""/],
    [['show', '--node', '  '], /--node needs a node name/],
    [['show', '--ip', ''], /--ip needs an address, not ""/],
    [
      ['config', 'set', 'maxBlocksPerNode=0'],
      /maxBlocksPerNode must be a whole number from 1 to 10000 \(IPAMConfig spec\.maxBlocksPerNode\), not "0"/,
    ],
    [['config', 'set', 'ipCooldownSeconds=3601'], /ipCooldownSeconds must be a whole number from 0 to 3600/],
    [
      ['config', 'set', 'minFreeAddressesPerNode=65537'],
      /minFreeAddressesPerNode must be a whole number from 0 to 65536/,
    ],
    [['config', 'set', 'strictAffinity=yes'], /strictAffinity must be true or false, not "yes"/],
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
    [['pool', 'create', 'Bad_Name', '--cidr', '10.1.0.0/16'], /NAME "Bad_Name" is not a valid IPPool name/],
    [['pool', 'create', 'x'.repeat(64), '--cidr', '10.1.0.0/16'], /is not a valid IPPool name: at most 63/],
    [['repair', 'sequence', 'Bad_Name'], /BLOCK "Bad_Name" is neither an IPAMBlock name/],
    [['repair', 'sequence', '10.244.0.0/33'], /BLOCK "10\.244\.0\.0\/33" is neither an IPAMBlock name/],
    [['adopt', 'plan', '--node', 'Bad_Name'], /--node "Bad_Name" is not a Kubernetes node name/],
    [['adopt', 'plan', '--node', ''], /--node needs a node name, not ""/],
    [['check', '--deletion-queue', ''], /--deletion-queue needs a directory/],
    [['check', '--deletion-queue', process.execPath], /--deletion-queue ".*" is not a directory/],
  ];
  for (const [args, message] of cases)
    test(`${args.join(' ')}`, async () => {
      const before = connections;
      const out = await ipamctl(args);
      assert.equal(out.code, 2, out.stdout + out.stderr);
      assert.match(out.stderr, message);
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

describe('ipamctl: a usage error names the deepest real command typed (read from the command modules)', () => {
  const cases: [string[], string][] = [
    [['pool', 'frobnicate'], 'ipamctl pool --help'],
    [['pool', 'create', 'x', '--bogus'], 'ipamctl pool create --help'],
    [['config', 'set'], 'ipamctl config set --help'],
    [['repair', 'sequence'], 'ipamctl repair sequence --help'],
    [['repair', 'frobnicate'], 'ipamctl repair --help'],
    [['adopt', 'plan', '--bogus'], 'ipamctl adopt plan --help'],
    [['adopt'], 'ipamctl adopt --help'],
    [['--context', 'x', 'show', '--bogus'], 'ipamctl show --help'],
    [['frobnicate'], 'ipamctl --help'],
  ];
  for (const [args, hint] of cases)
    test(`${args.join(' ')} → "${hint}"`, async () => {
      const out = await ipamctl(args);
      assert.equal(out.code, 2);
      assert.match(out.stderr, new RegExp(`Run "${hint.replaceAll('-', '\\-')}" for usage\\.`));
    });
});
