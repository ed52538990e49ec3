/**
 * Builds the CNI plugin `blockipam`:
 *   1. codegen: compiles ipam-plugin/netconf-schema.ts with ajv into standalone validation code,
 *      ipam-plugin/netconf-validate.generated.ts (committed; a unit test keeps it in sync);
 *   2. bundle: esbuild → build/plugin/blockipam.cjs (one CommonJS file, minified);
 *   3. sea: a Node 24 single-executable application → build/plugin/blockipam, a copy of
 *      node_modules/node's binary with the bundle injected by postject (runs without Node).
 *
 * Usage: node scripts/build-plugin.ts [--codegen-only] [--check-codegen]
 *   --codegen-only   step 1 only
 *   --check-codegen  exit 1 when the committed generated file differs from the schema's output
 * Prints the executable's path on stdout. Source: nodejs.org/api/single-executable-applications.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateValidator } from './build-plugin-codegen.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outDir = join(root, 'build', 'plugin');
const generatedPath = join(root, 'ipam-plugin', 'netconf-validate.generated.ts');
/** Sentinel fuse of Node's SEA support (fixed string from the Node docs). */
const seaFuse = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

function run(cmd: string, args: readonly string[]): void {
  const r = spawnSync(cmd, args, { stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed with ${r.status ?? r.signal}`);
}

async function bundle(): Promise<string> {
  const esbuild = await import('esbuild');
  const out = join(outDir, 'blockipam.cjs');
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

function sea(bundlePath: string): string {
  const nodeBin = join(root, 'node_modules', 'node', 'bin', 'node');
  const blob = join(outDir, 'blockipam.blob');
  const configPath = join(outDir, 'sea-config.json');
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
  const tmp = join(outDir, 'blockipam.tmp');
  copyFileSync(nodeBin, tmp);
  chmodSync(tmp, 0o755);
  const postject = createRequire(import.meta.url).resolve('postject/dist/cli.js');
  run(nodeBin, [postject, tmp, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', seaFuse]);
  const exe = join(outDir, 'blockipam');
  renameSync(tmp, exe);
  return exe;
}

async function main(argv: readonly string[]): Promise<void> {
  const code = generateValidator();
  if (argv.includes('--check-codegen')) {
    if (readFileSync(generatedPath, 'utf8') !== code) {
      console.error(`${generatedPath} is stale: run node scripts/build-plugin.ts --codegen-only`);
      process.exitCode = 1;
    }
    return;
  }
  writeFileSync(generatedPath, code);
  if (argv.includes('--codegen-only')) return;
  mkdirSync(outDir, { recursive: true });
  const exe = sea(await bundle());
  console.log(exe);
}

await main(process.argv.slice(2));
