/**
 * The standalone `blockipam` executable for integration, e2e tests and benchmarks: built on
 * demand with scripts/build-plugin.ts when missing or older than any source it bundles, and
 * run like a runtime would (CNI_* env, config on stdin). Also the native forwarder
 * (ipam-plugin/forwarder/, `scripts/build-plugin.ts --forwarder`), which the runtime calls as
 * `blockipam` with the TypeScript executable beside it as `blockipam-direct`.
 */
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, statSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const pluginDir = join(repoRoot, 'build', 'plugin');
export const pluginPath = join(pluginDir, 'blockipam');

/** Newest mtime (ms) of any .ts file under `dir`. */
export function newestSource(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    newest = Math.max(
      newest,
      e.isDirectory() ? newestSource(p) : e.name.endsWith('.ts') ? statSync(p).mtimeMs : 0,
    );
  }
  return newest;
}

/** Builds the executable unless it is newer than every .ts under ipam-plugin/ and core/. Returns its path. */
export function ensurePlugin(): string {
  const sources = Math.max(newestSource(join(repoRoot, 'ipam-plugin')), newestSource(join(repoRoot, 'core')));
  if (existsSync(pluginPath) && statSync(pluginPath).mtimeMs > sources) return pluginPath;
  const r = spawnSync(process.execPath, [join(repoRoot, 'scripts', 'build-plugin.ts')], {
    cwd: repoRoot,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`plugin build failed:\n${r.stderr}`);
  return pluginPath;
}

/**
 * Builds the forwarder unless it is newer than every file of ipam-plugin/forwarder/ (the build
 * script decides). Returns its path, build/forwarder/blockipam-forwarder.
 * @throws Error with the build's stderr (no Go toolchain: it names what to install)
 */
export function ensureForwarder(): string {
  const r = spawnSync(process.execPath, [join(repoRoot, 'scripts', 'build-plugin.ts'), '--forwarder'], {
    cwd: repoRoot,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`forwarder build failed:\n${r.stderr}`);
  return r.stdout.trim();
}

/**
 * A CNI bin directory `dir` (created) laid out as the node agent installs it with a forwarder:
 * the forwarder copied as `blockipam` (a copy: it finds `blockipam-direct` beside its own
 * file, /proc/self/exe, which a symlink would not move) and `blockipam-direct` a symlink to
 * `direct` (default {@link ensurePlugin}'s executable). Returns the path of `dir`/blockipam.
 */
export function forwardedPlugin(dir: string, direct: string = ensurePlugin()): string {
  mkdirSync(dir, { recursive: true });
  const exe = join(dir, 'blockipam');
  copyFileSync(ensureForwarder(), exe);
  symlinkSync(direct, join(dir, 'blockipam-direct'));
  return exe;
}

export interface PluginRun {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
  /** stdout parsed when it is exactly one JSON document */
  readonly json?: Record<string, unknown>;
}

/**
 * Runs the executable once with exactly `env` (plus PATH) and `stdin` (bytes as given).
 * @param exe another copy of it (e.g. one an installer put in place); default {@link ensurePlugin}'s
 */
export function runPlugin(
  env: Readonly<Record<string, string | undefined>>,
  stdin: string | Buffer,
  exe?: string,
): Promise<PluginRun> {
  return new Promise((resolve, reject) => {
    const clean = Object.fromEntries(
      Object.entries({ PATH: process.env.PATH, ...env }).filter(([, v]) => v !== undefined),
    ) as Record<string, string>;
    const child = spawn(exe ?? ensurePlugin(), [], { env: clean, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (status) => {
      let json: Record<string, unknown> | undefined;
      try {
        json = JSON.parse(stdout) as Record<string, unknown>;
      } catch {
        json = undefined;
      }
      resolve({ status: status ?? -1, stdout, stderr, ...(json ? { json } : {}) });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(stdin);
  });
}
