/**
 * The multi-call executable (cmd/blockipam.ts, built by scripts/build-plugin.ts --multi-call):
 * every role runs by its symlink and by its subcommand; a bad name or subcommand fails with
 * exit 2 and a message naming it; the agent's install mode copies the executable itself
 * (`--plugin-binary self`) into the CNI bin dir as `blockipam`, and the copy is the plugin.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import type { SpawnSyncReturns } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { controlPlane, kubectl } from '../helpers/control-plane.ts';
import { installCrds } from '../helpers/crds.ts';
import { ensureMultiCall, multiCallDir } from '../helpers/multi-call.ts';

let exe: string;
let dir: string;

function run(
  path: string,
  args: readonly string[],
  env: Record<string, string> = {},
): SpawnSyncReturns<string> {
  return spawnSync(path, args, {
    encoding: 'utf8',
    input: '',
    env: { PATH: process.env.PATH ?? '', ...env },
  });
}

/** The plugin's VERSION answer (CNI spec §"VERSION"). */
function assertVersion(r: SpawnSyncReturns<string>): void {
  assert.equal(r.status, 0, r.stderr);
  const answer = JSON.parse(r.stdout) as { cniVersion: string; supportedVersions: string[] };
  assert.ok(answer.supportedVersions.includes('1.1.0'), r.stdout);
}

describe('the multi-call executable', () => {
  before(() => {
    exe = ensureMultiCall();
    dir = mkdtempSync(join(tmpdir(), 'multi-call-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('the plugin role answers VERSION by its name and by `blockipam plugin`', () => {
    assertVersion(run(exe, [], { CNI_COMMAND: 'VERSION' }));
    assertVersion(run(exe, ['plugin'], { CNI_COMMAND: 'VERSION' }));
  });

  for (const [link, sub, usage] of [
    ['ipamctl', 'ipamctl', /ipamctl <command> \[options\]/],
    ['blockipam-agent', 'agent', /--install-cni/],
    ['blockipam-controller', 'controller', /--lease-duration-seconds/],
  ] as const) {
    test(`${link} --help by its symlink and \`blockipam ${sub} --help\``, () => {
      for (const r of [run(join(multiCallDir, link), ['--help']), run(exe, [sub, '--help'])]) {
        assert.equal(r.status, 0, r.stderr);
        assert.match(r.stdout, usage);
      }
    });
  }

  test('every role answers --version the same way: "<name> <version>", exit 0', () => {
    const { version } = JSON.parse(readFileSync(join(multiCallDir, '..', '..', 'package.json'), 'utf8')) as {
      version: string;
    };
    for (const [path, args, name] of [
      [exe, [], 'blockipam'],
      [exe, ['plugin'], 'blockipam'],
      [join(multiCallDir, 'ipamctl'), [], 'ipamctl'],
      [exe, ['ipamctl'], 'ipamctl'],
      [join(multiCallDir, 'blockipam-agent'), [], 'blockipam-agent'],
      [exe, ['agent'], 'blockipam-agent'],
      [join(multiCallDir, 'blockipam-controller'), [], 'blockipam-controller'],
      [exe, ['controller'], 'blockipam-controller'],
    ] as const) {
      const r = run(path, [...args, '--version']);
      assert.equal(r.status, 0, `${path} ${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stdout, `${name} ${version}\n`);
    }
  });

  test('the compiled daemons: an unknown flag and a missing kubeconfig are one line and exit 2', () => {
    for (const [link, extra] of [
      ['blockipam-agent', ['--node-name', 'n1']],
      ['blockipam-controller', []],
    ] as const) {
      const flag = run(join(multiCallDir, link), [...extra, '--bogus']);
      assert.equal(flag.status, 2, flag.stderr);
      assert.equal(flag.stderr, `${link}: Unknown argument: bogus\n`);
      const creds = run(join(multiCallDir, link), [...extra]);
      assert.equal(creds.status, 2, creds.stderr);
      assert.match(
        creds.stderr,
        new RegExp(`^${link}: not running in a cluster: .*pass --kubeconfig FILE\\)\n$`),
      );
    }
  });

  test('the role follows the invoked name, wherever the symlink is', () => {
    const link = join(dir, 'ipamctl');
    symlinkSync(exe, link);
    const r = run(link, ['--help']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /ipamctl <command>/);
  });

  test('an unknown name or subcommand exits 2 naming it; --help shows the roles', () => {
    const link = join(dir, 'blockipam-cni');
    symlinkSync(exe, link);
    const name = run(link, []);
    assert.equal(name.status, 2);
    assert.match(name.stderr, /unknown role "blockipam-cni"/);
    const sub = run(exe, ['agnet']);
    assert.equal(sub.status, 2);
    assert.match(sub.stderr, /unknown subcommand "agnet": one of plugin, ipamctl, agent, controller/);
    const help = run(exe, ['--help']);
    assert.equal(help.status, 0);
    assert.match(help.stdout, /blockipam controller \[options\]/);
  });

  test('agent install --plugin-binary self copies the executable itself as the plugin', () => {
    const ns = 'multi-call-ns';
    const sa = 'blockipam-plugin';
    kubectl(['create', 'namespace', ns]);
    try {
      const created = kubectl(['-n', ns, 'create', 'serviceaccount', sa]);
      assert.equal(created.status, 0, created.stderr);
      // the plugin's token is bound to the agent's Node
      kubectl(['create', '-f', '-'], {
        input: JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'mc-1' } }),
      });
      const r = run(exe, [
        'agent',
        'install',
        '--node-name',
        'mc-1',
        '--kubeconfig',
        controlPlane().adminKubeconfig,
        '--plugin-binary',
        'self',
        '--cni-bin-dir',
        join(dir, 'bin'),
        '--cni-conf-dir',
        join(dir, 'net.d'),
        '--plugin-kubeconfig',
        join(dir, 'net.d', 'blockipam-kubeconfig'),
        '--service-account',
        sa,
        '--namespace',
        ns,
      ]);
      assert.equal(r.status, 0, r.stderr);
      const installed = join(dir, 'bin', 'blockipam');
      assert.equal(statSync(installed).mode & 0o777, 0o755);
      assert.ok(readFileSync(installed).equals(readFileSync(exe)), 'the installed plugin is the executable');
      assertVersion(run(installed, [], { CNI_COMMAND: 'VERSION' }));
    } finally {
      kubectl(['delete', 'node', 'mc-1']);
      kubectl(['delete', 'namespace', ns, '--wait=false']);
    }
  });

  test('the compiled agent watches with the kubeconfig CA (Bun ignores undici dispatchers; no NODE_EXTRA_CA_CERTS)', async () => {
    installCrds({ once: true });
    const node = 'mc-watch';
    kubectl(['create', '-f', '-'], {
      input: JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: node } }),
    });
    const agent = spawn(
      exe,
      [
        'agent',
        'run',
        '--node-name',
        node,
        '--kubeconfig',
        controlPlane().adminKubeconfig,
        '--ipam-socket=', // not the host's default path
        '--metrics-port',
        '0',
      ],
      { env: { PATH: process.env.PATH ?? '' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let log = '';
    agent.stdout.on('data', (d: Buffer) => (log += d.toString()));
    agent.stderr.on('data', (d: Buffer) => (log += d.toString()));
    try {
      // Ready = every watch synced and connected (docs/design-agent.md §Failure behaviour); poll its port.
      let ready = false;
      for (let i = 0; i < 120 && !ready; i++) {
        await sleep(500);
        const port = /"port":(\d+)/.exec(log)?.[1];
        if (!port) continue;
        ready = await fetch(`http://127.0.0.1:${port}/readyz`).then(
          (r) => r.status === 200,
          () => false,
        );
      }
      assert.ok(ready, `the agent never became ready:\n${log.slice(-3000)}`);
      assert.doesNotMatch(log, /certificate/);
    } finally {
      agent.kill('SIGTERM');
      kubectl(['delete', 'node', node, '--wait=false']);
    }
  });
});
