/**
 * Builds the CNI plugin `blockipam`:
 *   1. codegen: compiles ipam-plugin/cni/netconf-schema.ts with ajv into standalone validation code,
 *      ipam-plugin/cni/netconf-validate.generated.ts (committed; a unit test keeps it in sync);
 *   2. the standalone executable build/plugin/blockipam (runs on a host with no JavaScript
 *      runtime installed), one of:
 *      - bun (default): `bun build --compile --bytecode --minify`, Bun's runtime with the
 *        bundle and its precompiled bytecode appended (bun.sh/docs/bundler/executables);
 *      - node: esbuild → build/plugin/node/blockipam.cjs, then a Node 24 single-executable
 *        application, a copy of node_modules/node's binary with the bundle injected by postject
 *        (nodejs.org/api/single-executable-applications) → build/plugin/node/blockipam.
 *   Why Bun is the default: start-up 13 ms against 37 ms and a warm ADD ~35 ms against ~115 ms
 *   on the same machine (docs/design-plugin.md "Runtime", docs/benchmarks.md §CNI plugin).
 *   3. with --multi-call instead: the multi-call executable build/bin/blockipam (cmd/blockipam.ts:
 *      plugin, ipamctl, agent and controller in one file; docs/image.md) and its role symlinks
 *      build/bin/{ipamctl,blockipam-agent,blockipam-controller} — Bun only, built with
 *      `--bytecode --format=esm --splitting` (each role its own chunk, so the plugin role loads
 *      only the plugin's code; plain `--bytecode` implies CommonJS, and the roles' top-level
 *      await then fails to compile).
 *
 * Usage: node scripts/build-plugin.ts [--runtime bun|node] [--multi-call] [--target T] [--codegen-only] [--check-codegen]
 *   --runtime        bun (default) or node
 *   --multi-call     build the multi-call executable (step 3) instead of the plugin alone
 *   --target         Bun's cross-compile target, default bun-linux-x64 (needs AVX2; use
 *                    bun-linux-x64-baseline for older x86-64 CPUs, bun-linux-arm64 for arm64)
 *   --codegen-only   step 1 only
 *   --check-codegen  exit 1 when the committed generated file differs from the schema's output
 * Prints the executable's path on stdout.
 */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { generateValidator } from './build-plugin-codegen.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outDir = join(root, 'build', 'plugin');
const nodeOutDir = join(outDir, 'node');
const multiOutDir = join(root, 'build', 'bin');
/** The multi-call executable's role names besides `blockipam` (cmd/role.ts ROLE_NAMES). */
const roleLinks = ['ipamctl', 'blockipam-agent', 'blockipam-controller'];
const generatedPath = join(root, 'ipam-plugin', 'cni', 'netconf-validate.generated.ts');
/** Sentinel fuse of Node's SEA support (fixed string from the Node docs). */
const seaFuse = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

function run(cmd: string, args: readonly string[]): void {
  const r = spawnSync(cmd, args, { stdio: ['ignore', 'inherit', 'inherit'] });
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

async function bundle(): Promise<string> {
  const esbuild = await import('esbuild');
  const out = join(nodeOutDir, 'blockipam.cjs');
  await esbuild.build({
    entryPoints: [join(root, 'ipam-plugin', 'main.ts')],
    bundle: true,
    platform: 'node',
    target: 'node24',
    format: 'cjs',
    minify: true,
    legalComments: 'none',
    outfile: out,
    logLevel: 'warning',
  });
  return out;
}

/** Node's single-executable application → build/plugin/node/blockipam. */
function sea(bundlePath: string): string {
  const nodeBin = join(root, 'node_modules', 'node', 'bin', 'node');
  const blob = join(nodeOutDir, 'blockipam.blob');
  const configPath = join(nodeOutDir, 'sea-config.json');
  const seaConfig = {
    main: bundlePath,
    output: blob,
    disableExperimentalSEAWarning: true,
    useCodeCache: true,
    // Node's default trust store is its bundled Mozilla roots, parsed on a helper thread as
    // soon as node:tls loads (~10 ms CPU per call) although a kubeconfig CA replaces them.
    // With OpenSSL's store instead, kube-backend.ts points it at nothing when the kubeconfig
    // names a CA, so nothing is parsed (docs/design-plugin.md "Start-up budget").
    execArgv: ['--use-openssl-ca'],
  };
  writeFileSync(configPath, JSON.stringify(seaConfig));
  run(nodeBin, ['--experimental-sea-config', configPath]);
  const tmp = join(nodeOutDir, 'blockipam.tmp');
  copyFileSync(nodeBin, tmp);
  chmodSync(tmp, 0o755);
  const postject = createRequire(import.meta.url).resolve('postject/dist/cli.js');
  run(nodeBin, [postject, tmp, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', seaFuse]);
  const exe = join(nodeOutDir, 'blockipam');
  renameSync(tmp, exe);
  return exe;
}

async function main(argv: readonly string[]): Promise<void> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      runtime: { type: 'string', default: 'bun' },
      'multi-call': { type: 'boolean', default: false },
      target: { type: 'string', default: 'bun-linux-x64' },
      'codegen-only': { type: 'boolean', default: false },
      'check-codegen': { type: 'boolean', default: false },
    },
  });
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
  const runtime = values.runtime;
  if (runtime !== 'bun' && runtime !== 'node')
    throw new Error(`--runtime must be bun or node, not ${runtime}`);
  if (values['multi-call']) {
    if (runtime !== 'bun') throw new Error('--multi-call is built with Bun only (--runtime bun)');
    mkdirSync(multiOutDir, { recursive: true });
    console.log(multiCall(values.target));
    return;
  }
  mkdirSync(runtime === 'bun' ? outDir : nodeOutDir, { recursive: true });
  console.log(
    runtime === 'bun'
      ? bunExecutable(values.target, join(root, 'ipam-plugin', 'main.ts'), outDir)
      : sea(await bundle()),
  );
}

await main(process.argv.slice(2));
