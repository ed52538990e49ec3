/**
 * The blockipam image (scripts/build-image.sh, docs/image.md): the OCI archive's content and
 * config; the same inputs give a byte-identical archive and the build writes no host path; then,
 * imported into every node (`ctl.sh RUN import-image`), pods from it run each role of the
 * multi-call executable by its link and by its subcommand, and the `ip` the agent's --routes needs.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { cluster, importImage, kubectl, kubectlOk } from '../helpers/cluster.ts';
import { waitFor } from './blockipam.ts';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const buildImage = join(repo, 'scripts', 'build-image.sh');
const hostState = join(repo, 'test', 'cluster', 'host-state.sh');
const version = (JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { version: string }).version;
const imageName = `localhost/blockipam:${version}`;
const ns = 'bipam-image';
let work: string;
let archive: string;

/** Runs build-image.sh; returns its KEY=VALUE stdout. */
function build(args: readonly string[] = []): Record<string, string> {
  const r = spawnSync('bash', [buildImage, ...args], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return Object.fromEntries(
    r.stdout
      .trim()
      .split('\n')
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
}

/** One file of a tar archive. */
function tarFile(tar: string, path: string): Buffer {
  return execFileSync('tar', ['-xOf', tar, path], { maxBuffer: 1 << 30 });
}

/** The paths section of a host-state snapshot (what a builder writing host paths would change). */
function hostPaths(file: string): string[] {
  const lines = readFileSync(file, 'utf8').split('\n');
  const from = lines.indexOf('## paths');
  const to = lines.indexOf('## cgroups');
  return lines.slice(from, to).filter((l) => !/blockipam-cluster\.|\/run\/netns|\/run\/blockipam-cp/.test(l));
}

describe('the blockipam image', () => {
  before(() => {
    work = mkdtempSync(join(tmpdir(), 'image-test-'));
    archive = build().ARCHIVE ?? '';
  });
  after(() => {
    rmSync(work, { recursive: true, force: true });
    kubectl(['delete', 'namespace', ns, '--wait=false']);
  });

  test('the archive: one image tagged with the package version, amd64, the executable and its links, iproute2, nftables, no /dev nodes, no shell', () => {
    const index = JSON.parse(tarFile(archive, './index.json').toString()) as {
      manifests: { digest: string; annotations: Record<string, string>; platform: Record<string, string> }[];
    };
    assert.equal(index.manifests.length, 1);
    const m = index.manifests[0];
    assert.ok(m);
    assert.equal(m.annotations['io.containerd.image.name'], imageName);
    assert.equal(m.annotations['org.opencontainers.image.ref.name'], imageName);
    const blob = (d: string): Buffer => tarFile(archive, `./blobs/sha256/${d.slice('sha256:'.length)}`);
    const manifest = JSON.parse(blob(m.digest).toString()) as {
      config: { digest: string };
      layers: { digest: string; mediaType: string }[];
    };
    const config = JSON.parse(blob(manifest.config.digest).toString()) as {
      architecture: string;
      os: string;
      created: string;
      config: { Env: string[]; Cmd: string[]; Labels: Record<string, string> };
    };
    assert.equal(config.architecture, 'amd64');
    assert.equal(config.os, 'linux');
    assert.equal(config.created, '1970-01-01T00:00:00Z', 'buildah --timestamp 0');
    assert.equal(config.config.Labels['org.opencontainers.image.version'], version);
    assert.ok(config.config.Env.some((e) => e.startsWith('PATH=') && e.includes('/usr/local/bin')));
    assert.deepEqual(config.config.Cmd, ['/usr/local/bin/blockipam', '--help']);
    const listing: string[] = [];
    for (const layer of manifest.layers) {
      const file = join(work, 'layer.tar');
      execFileSync('sh', [
        '-c',
        'tar -xOf "$0" "$1" > "$2"',
        archive,
        `./blobs/sha256/${layer.digest.slice(7)}`,
        file,
      ]);
      listing.push(
        ...execFileSync('tar', ['-tvzf', file], { encoding: 'utf8', maxBuffer: 1 << 28 }).split('\n'),
      );
    }
    const entry = (path: string): string | undefined =>
      listing.find((l) => l.endsWith(` ${path}`) || l.includes(` ${path} -> `));
    assert.match(entry('usr/local/bin/blockipam') ?? '', /^-rwxr-xr-x/);
    for (const link of ['ipamctl', 'blockipam-agent', 'blockipam-controller'])
      assert.match(entry(`usr/local/bin/${link}`) ?? '', new RegExp(`${link} -> blockipam$`));
    assert.ok(entry('bin/ip'), 'iproute2 is in the image');
    assert.ok(entry('usr/sbin/nft'), 'nftables is in the image (the agent’s --masquerade)');
    assert.equal(entry('bin/sh'), undefined, 'no shell');
    assert.deepEqual(
      listing.filter((l) => / dev\/./.test(l)),
      [],
      'no device nodes',
    );
    const exe = readFileSync(join(repo, 'build', 'bin', 'blockipam'));
    assert.ok(
      listing.some((l) => l.includes(` ${exe.length} `) && l.endsWith(' usr/local/bin/blockipam')),
      'the executable, unstripped',
    );
    const forwarder = readFileSync(join(repo, 'build', 'forwarder', 'blockipam-forwarder'));
    assert.ok(
      listing.some(
        (l) =>
          l.startsWith('-rwxr-xr-x') &&
          l.includes(` ${forwarder.length} `) &&
          l.endsWith(' usr/local/bin/blockipam-forwarder'),
      ),
      'the native forwarder (the plugin the agent installs)',
    );
  });

  test('same inputs, byte-identical archive; the build writes no host path', () => {
    const before = join(work, 'host-before');
    const afterFile = join(work, 'host-after');
    execFileSync('bash', [hostState, 'snapshot', before]);
    const second = build(['--out', join(work, 'again.oci.tar')]);
    execFileSync('bash', [hostState, 'snapshot', afterFile]);
    assert.ok(readFileSync(second.ARCHIVE ?? '').equals(readFileSync(archive)), 'the same bytes');
    assert.deepEqual(hostPaths(afterFile), hostPaths(before));
  });

  test('imported into every node, a pod from the image runs each role (by link and by subcommand)', async () => {
    importImage(archive);
    kubectlOk(['create', 'namespace', ns]);
    const c = cluster();
    const runs: { name: string; command: string[]; env?: Record<string, string>; expect: RegExp }[] = [
      {
        name: 'plugin',
        command: ['blockipam'],
        env: { CNI_COMMAND: 'VERSION' },
        expect: /"supportedVersions":\[.*"1\.1\.0"/,
      },
      { name: 'ipamctl', command: ['ipamctl', '--help'], expect: /ipamctl <command> \[options\]/ },
      { name: 'agent', command: ['blockipam-agent', '--help'], expect: /--install-cni/ },
      { name: 'controller', command: ['blockipam-controller', '--help'], expect: /--lease-duration-seconds/ },
      { name: 'sub-agent', command: ['blockipam', 'agent', '--help'], expect: /--install-cni/ },
      { name: 'sub-ipamctl', command: ['blockipam', 'ipamctl', '--help'], expect: /ipamctl <command>/ },
      { name: 'ip', command: ['ip', '-V'], expect: /iproute2/ },
      { name: 'nft', command: ['nft', '--version'], expect: /^nftables v1\./ },
    ];
    runs.forEach((r, i) => {
      kubectlOk(
        ['-n', ns, 'apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: r.name },
          spec: {
            // hostNetwork and a fixed node: independent of the CNI other tests install.
            nodeName: c.nodes[i % c.nodes.length],
            hostNetwork: true,
            tolerations: [{ operator: 'Exists' }],
            restartPolicy: 'Never',
            automountServiceAccountToken: false,
            containers: [
              {
                name: 'main',
                image: imageName,
                imagePullPolicy: 'Never',
                command: r.command,
                env: Object.entries(r.env ?? {}).map(([name, value]) => ({ name, value })),
                securityContext: {
                  readOnlyRootFilesystem: true,
                  runAsUser: 65534,
                  capabilities: { drop: ['ALL'] },
                },
              },
            ],
          },
        }),
      );
    });
    for (const r of runs) {
      const phase = await waitFor(
        `pod ${r.name} finished`,
        () => {
          const p = kubectl(['-n', ns, 'get', 'pod', r.name, '-o', 'jsonpath={.status.phase}']).stdout;
          return p === 'Succeeded' || p === 'Failed' ? p : undefined;
        },
        120_000,
      );
      const logs = kubectlOk(['-n', ns, 'logs', r.name]);
      assert.equal(phase, 'Succeeded', `${r.name}: ${logs}`);
      assert.match(logs, r.expect, r.name);
    }
  });
});
