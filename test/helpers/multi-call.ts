/**
 * The multi-call `blockipam` executable (cmd/blockipam.ts) for tests: built on demand with
 * `scripts/build-plugin.ts --multi-call` when missing or older than any source it bundles.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { newestSource, repoRoot } from '../plugin/helpers/plugin-exe.ts';
import { requireIntegrationTier } from './tier.ts';

export const multiCallDir = join(repoRoot, 'build', 'bin');
export const multiCallPath = join(multiCallDir, 'blockipam');
/** Every folder whose sources the executable bundles. */
const sourceDirs = ['cmd', 'ipam-plugin', 'core', 'cli', 'block-controller'];

/** Builds the executable and its role symlinks unless newer than every source. Returns its path. */
export function ensureMultiCall(): string {
  requireIntegrationTier('the Bun build of the multi-call executable');
  const sources = Math.max(...sourceDirs.map((d) => newestSource(join(repoRoot, d))));
  if (existsSync(multiCallPath) && statSync(multiCallPath).mtimeMs > sources) return multiCallPath;
  const r = spawnSync(process.execPath, [join(repoRoot, 'scripts', 'build-plugin.ts'), '--multi-call'], {
    cwd: repoRoot,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`multi-call build failed:\n${r.stderr}`);
  return multiCallPath;
}
