/**
 * How the plugin's node-local caches (snapshot, kubeconfig, cluster identity) write a file under
 * `cacheDir`: to `<file>.<pid>`, then rename, so a reader sees the old or the new file whole. A
 * writer SIGKILLed between the two leaves its temporary file behind; every write prunes such
 * leftovers older than {@link staleTempMs} (a live writer's is younger: it renames within
 * milliseconds).
 */
import { readdirSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** 1 min: far longer than any write-then-rename takes, so only a dead writer's file is older. */
export const staleTempMs = 60_000;

/**
 * The caches' file names (`<kind>-<16 hex>.json`, the lock hand-off's `<lock file>.handoff.json`
 * and the lock queue's `<pid>-<32 hex>.req|res`) with a writer's `.<pid>` suffix.
 */
const TEMP_NAME =
  /^(?:(?:snapshot|kubeconfig|cluster)-[0-9a-f]{16}\.json|.+\.handoff\.json|\d+-[0-9a-f]{32}\.(?:req|res))\.\d+$/;

/**
 * Writes `data` to `file` atomically (temporary file + rename) after pruning the directory's
 * stale temporary files.
 * @param mode of the new file (default 0o644 less the umask; 0o600 for credentials)
 * @throws the write's or rename's error (callers treat a cache that cannot be written as absent)
 */
export function writeFileAtomic(file: string, data: string, mode?: number): void {
  pruneStaleTemps(dirname(file));
  const temp = join(dirname(file), `${basename(file)}.${process.pid}`);
  writeFileSync(temp, data, mode === undefined ? {} : { mode });
  renameSync(temp, file);
}

/** Removes temporary files of dead writers (matching the caches' names, older than {@link staleTempMs}). */
export function pruneStaleTemps(dir: string, nowMs = Date.now()): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return; // no directory yet: nothing to prune
  }
  for (const name of names) {
    if (!TEMP_NAME.test(name)) continue;
    try {
      if (statSync(join(dir, name)).mtimeMs < nowMs - staleTempMs) unlinkSync(join(dir, name));
    } catch {
      // raced with another writer's prune or rename: nothing to do
    }
  }
}
