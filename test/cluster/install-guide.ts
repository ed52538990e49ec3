/**
 * docs/install.md's guide as a test runs it (install-guide.int.test.ts): its command blocks
 * (fenced ```` ```bash install-guide NAME ````), a reader's environment around them — the
 * cluster's admin kubeconfig, a registry of its own (`crane registry serve` on loopback), Helm
 * with `--plain-http` for that registry — and the one step a test cluster cannot do as a real
 * one: the nodes' pull from the host's loopback, replaced by an import plus a tag in each node.
 */
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { cluster, inNode } from '../helpers/cluster.ts';
import { helmBinaries, REPO } from '../charts/helm.ts';

/** One command block of the guide: its NAME and its text. */
export interface GuideBlock {
  readonly name: string;
  readonly script: string;
}

/** The guide's blocks, in the document's order. */
export function guideBlocks(doc = join(REPO, 'docs', 'install.md')): GuideBlock[] {
  const text = readFileSync(doc, 'utf8');
  return [...text.matchAll(/^```bash install-guide (\S+)\n([\s\S]*?)^```$/gm)].map((m) => ({
    name: m[1] ?? '',
    script: m[2] ?? '',
  }));
}

/**
 * crane, built by test/tools/build-crane.sh (cached; returns at once when built).
 * @throws Error with the build's stderr when it fails
 */
export function craneBinary(): string {
  const r = spawnSync('bash', [join(REPO, 'test', 'tools', 'build-crane.sh')], { encoding: 'utf8' });
  const line = r.stdout.split('\n').find((l) => l.startsWith('CRANE='));
  if (r.status !== 0 || !line)
    throw new Error(`build-crane.sh failed (${r.status}): ${r.stderr.slice(-2000)}`);
  return line.slice('CRANE='.length);
}

/** A free TCP port on 127.0.0.1 (closed again: the registry binds it next). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** The reader's registry: crane's in-memory OCI registry on loopback, HTTP. */
export interface Registry {
  /** host:port */
  readonly host: string;
  readonly child: ChildProcess;
  /** Ends the registry (SIGTERM to its PID) and waits for it. */
  stop(): Promise<void>;
}

/**
 * Starts `crane registry serve` on a free loopback port and waits until `/v2/` answers.
 * @throws Error when it does not answer within 30 s
 */
export async function startRegistry(crane: string): Promise<Registry> {
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  const child = spawn(crane, ['registry', 'serve', '--address', host], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  // 30 s: a cold start of a Go binary at load ~20 takes a few seconds
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`crane registry serve exited: ${stderr.slice(-1000)}`);
    const status = await fetch(`http://${host}/v2/`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) break;
    if (Date.now() > deadline)
      throw new Error(`the registry on ${host} did not answer: ${stderr.slice(-1000)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return {
    host,
    child,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * The folder put first on the guide's PATH: `crane`, and `helm` = Helm 4 with `--plain-http`
 * added to the commands that reach a registry (the loopback registry speaks HTTP).
 */
export function guideTools(dir: string, crane: string): string {
  mkdirSync(dir, { recursive: true });
  symlinkSync(crane, join(dir, 'crane'));
  const helm = join(dir, 'helm');
  writeFileSync(
    helm,
    [
      '#!/bin/sh',
      '# Helm 4; the test registry is plain HTTP on loopback',
      'case "$1" in',
      `  push | install | upgrade | pull | show) exec "${helmBinaries()[4]}" "$@" --plain-http ;;`,
      `  *) exec "${helmBinaries()[4]}" "$@" ;;`,
      'esac',
      '',
    ].join('\n'),
  );
  chmodSync(helm, 0o755);
  return dir;
}

/** The guide's environment variables (docs/install.md, "Image and chart in your registry"). */
export interface GuideEnv {
  readonly REGISTRY: string;
  readonly VERSION: string;
  readonly VALUES: string;
  readonly KUBECONFIG: string;
}

/** Result of one block. */
export interface StepRun {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs block `name` with bash (`-euo pipefail`) in the repository, as a reader would in a clone,
 * with `env` set and `tools` first on PATH, then the cluster's kubectl.
 * @throws Error when the guide has no such block
 */
export function runStep(name: string, env: GuideEnv, tools: string): StepRun {
  const block = guideBlocks().find((b) => b.name === name);
  if (!block) throw new Error(`docs/install.md has no block "bash install-guide ${name}"`);
  const r = spawnSync('bash', ['-euo', 'pipefail', '-c', block.script], {
    cwd: REPO,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, ...env, PATH: `${tools}:${cluster().bin}:${process.env.PATH ?? ''}` },
  });
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/**
 * The registry substitute: in every node's containerd, `from` (imported already) tagged as
 * `to` — what a pull of `to` would have left there.
 * @throws Error naming the node where the tag failed
 */
export function tagInNodes(from: string, to: string): void {
  for (const node of cluster().nodes) {
    const r = inNode(node, 'sh', [
      '-c',
      `ctr --address "$CONTAINERD" -n k8s.io images tag --force '${from}' '${to}'`,
    ]);
    if (r.status !== 0) throw new Error(`${node}: ctr images tag ${from} ${to}: ${r.stderr}`);
  }
}
