/**
 * Creates a directory and its missing parents one component at a time, in a bounded loop.
 * Never `mkdirSync(p, {recursive: true})` on a user-supplied path: Node 24's recursive mkdir
 * loops forever at 100% CPU on a path under /proc (`/proc/nope` answers ENOENT to every try).
 */
import { mkdirSync } from 'node:fs';

/** More components than any sane cache directory has. */
const maxDepth = 64;

/**
 * Ensures the absolute directory `dir` exists.
 * @throws the first mkdir error other than EEXIST (e.g. ENOENT under /proc, EACCES), or an
 *   Error for a relative or absurdly deep path
 */
export function ensureDir(dir: string, mode = 0o755): void {
  if (!dir.startsWith('/')) throw new Error(`not an absolute path: ${dir}`);
  const parts = dir.split('/').filter((p) => p !== '');
  if (parts.length > maxDepth) throw new Error(`path too deep: ${dir}`);
  let path = '';
  for (const part of parts) {
    path += `/${part}`;
    try {
      mkdirSync(path, { mode });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  }
}
