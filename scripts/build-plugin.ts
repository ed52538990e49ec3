/**
 * Builds the CNI plugin `blockipam`:
 *   1. codegen: compiles core/cni/netconf-schema.ts with ajv into standalone validation code,
 *      core/cni/netconf-validate.generated.ts (committed; a unit test keeps it in sync);
 *   2. the standalone executable build/plugin/blockipam (runs on a host with no JavaScript
 *      runtime installed): `bun build --compile --bytecode --minify --format=esm --splitting`
 *      (chunks: VERSION loads only its own), Bun's runtime with the
 *      bundle and its precompiled bytecode appended (bun.sh/docs/bundler/executables). Why Bun:
 *      start-up 13 ms against 37 ms for a Node 24 single-executable build of the same code, and
 *      the host lock is flock(2) through bun:ffi (docs/design-plugin.md "Runtime").
 *   3. with --multi-call instead: the multi-call executable build/bin/blockipam (cmd/blockipam.ts:
 *      plugin, ipamctl, agent and controller in one file; docs/image.md) and its role symlinks
 *      build/bin/{ipamctl,blockipam-agent,blockipam-controller} — Bun only, built with
 *      `--bytecode --format=esm --splitting` (each role its own chunk, so the plugin role loads
 *      only the plugin's code; plain `--bytecode` implies CommonJS, and the roles' top-level
 *      await then fails to compile).
 *   4. with --forwarder instead: the native forwarder build/forwarder/blockipam-forwarder, Go
 *      source in ipam-plugin/forwarder/ (standard library only; docs/design-plugin.md
 *      §"Start-up"): `CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags='-s -w -buildid='`,
 *      a static executable whose bytes depend only on the sources and the Go version; rebuilt
 *      only when a source is newer. Go's caches live under BLOCKIPAM_CACHE (default
 *      ~/.cache/blockipam)/go, with the module proxy off (it has no dependencies).
 *
 * Usage: node scripts/build-plugin.ts [--multi-call | --forwarder] [--target T] [--codegen-only] [--check-codegen]
 *   --multi-call     build the multi-call executable (step 3) instead of the plugin alone
 *   --forwarder      build the forwarder (step 4) only; no codegen, no Bun
 *   --target         Bun's cross-compile target, default bun-linux-x64 (needs AVX2; use
 *                    bun-linux-x64-baseline for older x86-64 CPUs, bun-linux-arm64 for arm64).
 *                    With --forwarder: GOARCH from it (bun-linux-x64, bun-linux-x64-baseline →
 *                    amd64; bun-linux-arm64 → arm64; any other target is refused by name), the
 *                    executable build/forwarder/linux-<GOARCH>/blockipam-forwarder; without
 *                    --target, the host's architecture at build/forwarder/blockipam-forwarder
 *   --codegen-only   step 1 only
 *   --check-codegen  exit 1 when the committed generated file differs from the schema's output
 * Prints the executable's path on stdout.
 */
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { generateValidator } from './build-plugin-codegen.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outDir = join(root, 'build', 'plugin');
const multiOutDir = join(root, 'build', 'bin');
/** The multi-call executable's role names besides `blockipam` (cmd/role.ts ROLE_NAMES). */
const roleLinks = ['ipamctl', 'blockipam-agent', 'blockipam-controller'];
const generatedPath = join(root, 'core', 'cni', 'netconf-validate.generated.ts');

const forwarderSrc = join(root, 'ipam-plugin', 'forwarder');
const forwarderDir = join(root, 'build', 'forwarder');
/** Bun's default cross-compile target. */
const DEFAULT_TARGET = 'bun-linux-x64';
/**
 * Bun targets the forwarder builds for → GOARCH. Linux on amd64 and arm64 only: the forwarder's
 * memfd_create syscall number is defined for those two (sysMemfdCreate in main.go).
 */
const FORWARDER_ARCH: Readonly<Record<string, 'amd64' | 'arm64'>> = {
  'bun-linux-x64': 'amd64',
  'bun-linux-x64-baseline': 'amd64',
  'bun-linux-arm64': 'arm64',
};

/**
 * The forwarder's GOARCH and path for `target` (undefined: the host's architecture, at
 * build/forwarder/blockipam-forwarder).
 * @throws Error naming a target the forwarder cannot be built for
 */
export function forwarderTarget(target: string | undefined): { goarch?: string; path: string } {
  if (target === undefined) return { path: join(forwarderDir, 'blockipam-forwarder') };
  const goarch = FORWARDER_ARCH[target];
  if (goarch === undefined)
    throw new Error(
      `--forwarder --target ${target}: the forwarder builds for Linux amd64 and arm64 only (--target ${Object.keys(FORWARDER_ARCH).join(', ')})`,
    );
  return { goarch, path: join(forwarderDir, `linux-${goarch}`, 'blockipam-forwarder') };
}

function run(cmd: string, args: readonly string[], o: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): void {
  const r = spawnSync(cmd, args, { stdio: ['ignore', 'inherit', 'inherit'], ...o });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed with ${r.status ?? r.signal}`);
}

/**
 * Bun's compiled executable of `entry` → `dir`/blockipam (written as a temporary file, then
 * renamed). `extra`: further `bun build` flags.
 */
function bunExecutable(target: string, entry: string, dir: string, extra: readonly string[] = []): string {
  const bun = join(root, 'node_modules', '.bin', 'bun');
  const exe = join(dir, 'blockipam');
  const tmp = join(dir, 'blockipam.tmp');
  run(bun, [
    'build',
    '--compile',
    '--bytecode',
    '--minify',
    ...extra,
    // A CNI plugin runs in whatever directory the runtime has: it must not pick up a .env,
    // bunfig.toml, tsconfig.json or package.json from there (each could change its environment
    // or behaviour, e.g. NODE_TLS_REJECT_UNAUTHORIZED=0 in a .env), and scanning costs start-up.
    '--no-compile-autoload-dotenv',
    '--no-compile-autoload-bunfig',
    '--no-compile-autoload-tsconfig',
    '--no-compile-autoload-package-json',
    `--target=${target}`,
    entry,
    '--outfile',
    tmp,
  ]);
  renameSync(tmp, exe);
  return exe;
}

/** The multi-call executable build/bin/blockipam and its role symlinks (relative: the directory moves as one). */
function multiCall(target: string): string {
  const exe = bunExecutable(target, join(root, 'cmd', 'blockipam.ts'), multiOutDir, [
    '--format=esm',
    '--splitting',
  ]);
  for (const name of roleLinks) {
    const link = join(multiOutDir, name);
    rmSync(link, { force: true });
    symlinkSync('blockipam', link);
  }
  return exe;
}

/** The Go toolchain: `go` on PATH, else the official install location. */
function goBinary(): string {
  const onPath = spawnSync('go', ['version'], { stdio: 'ignore' });
  if (onPath.status === 0) return 'go';
  if (existsSync('/usr/local/go/bin/go')) return '/usr/local/go/bin/go';
  throw new Error('the forwarder needs Go 1.26 or later (go.dev/dl) on PATH or in /usr/local/go');
}

/**
 * The forwarder for Bun target `target` (forwarderTarget: default the host's, at
 * build/forwarder/blockipam-forwarder), rebuilt only when missing or older than a file of
 * ipam-plugin/forwarder/ (step 4 above). Returns its path.
 * @throws Error naming a target it cannot be built for, or the failed build
 */
export function buildForwarder(target?: string): string {
  const { goarch, path: forwarderPath } = forwarderTarget(target);
  const newest = Math.max(...readdirSync(forwarderSrc).map((f) => statSync(join(forwarderSrc, f)).mtimeMs));
  if (existsSync(forwarderPath) && statSync(forwarderPath).mtimeMs > newest) return forwarderPath;
  const cache =
    process.env.BLOCKIPAM_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'blockipam');
  mkdirSync(dirname(forwarderPath), { recursive: true });
  const tmp = `${forwarderPath}.tmp`;
  run(goBinary(), ['build', '-trimpath', '-buildvcs=false', '-ldflags=-s -w -buildid=', '-o', tmp, '.'], {
    cwd: forwarderSrc,
    env: {
      ...process.env,
      CGO_ENABLED: '0',
      GOOS: 'linux',
      ...(goarch ? { GOARCH: goarch } : {}),
      GOTOOLCHAIN: 'local',
      GOFLAGS: '',
      GOENV: 'off',
      GOPROXY: 'off',
      GOCACHE: join(cache, 'go', 'build-cache'),
      GOPATH: join(cache, 'go', 'path'),
    },
  });
  renameSync(tmp, forwarderPath);
  return forwarderPath;
}

function main(argv: readonly string[]): void {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      'multi-call': { type: 'boolean', default: false },
      forwarder: { type: 'boolean', default: false },
      target: { type: 'string' },
      'codegen-only': { type: 'boolean', default: false },
      'check-codegen': { type: 'boolean', default: false },
    },
  });
  if (values.forwarder) {
    try {
      console.log(buildForwarder(values.target));
    } catch (e) {
      console.error((e as Error).message);
      process.exitCode = 1;
    }
    return;
  }
  const target = values.target ?? DEFAULT_TARGET;
  const code = generateValidator();
  if (values['check-codegen']) {
    if (readFileSync(generatedPath, 'utf8') !== code) {
      console.error(`${generatedPath} is stale: run node scripts/build-plugin.ts --codegen-only`);
      process.exitCode = 1;
    }
    return;
  }
  writeFileSync(generatedPath, code);
  if (values['codegen-only']) return;
  if (values['multi-call']) {
    mkdirSync(multiOutDir, { recursive: true });
    console.log(multiCall(target));
    return;
  }
  mkdirSync(outDir, { recursive: true });
  // ESM chunks, as the multi-call build: VERSION evaluates only its own chunk's bytecode
  // (CPU per VERSION 17.7 ms against 18.8 ms for one bundle, 60 interleaved runs, load 3-5).
  console.log(
    bunExecutable(target, join(root, 'ipam-plugin', 'main.ts'), outDir, ['--format=esm', '--splitting']),
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main(process.argv.slice(2));
