/**
 * Atomic file replacement for everything the agent writes on its host (plugin executable 0755,
 * conflist 0644, kubeconfig 0600): the content goes to a temporary file in the
 * same directory (same filesystem), created with the target's mode, is flushed (fsync), and is
 * renamed over the target — rename(2) is atomic, so a reader sees the old file or the new one,
 * never a half-written one, and a process still running the old executable keeps its inode. The
 * target gets the new file's mode whatever the old one had.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { chmod, copyFile, mkdir, open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/**
 * File modes. 0600 (root-only: the agent and the plugin run as root) for anything holding a
 * credential (the plugin's kubeconfig) or data private to the cluster's users.
 */
export const MODE_SECRET = 0o600;
export const MODE_PUBLIC = 0o644;
export const MODE_EXECUTABLE = 0o755;
/**
 * Replaces `path` with `data` atomically; creates the directory (0755) when missing.
 * @param mode the file's mode (applied before the rename, so the new file is never readable
 *   beyond it, whatever the umask)
 * @throws the fs error (the temporary file is removed)
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array, mode: number): Promise<void> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true, mode: 0o755 });
  const temp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    const handle = await open(temp, 'wx', mode);
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await chmod(temp, mode);
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

/**
 * Copies `source` over `target` atomically (temporary copy in the target's directory, fsync'd
 * by copyFile's close, mode, rename), unless `target` already has the same content (SHA-256).
 * @returns true when the target was (re)written
 */
export async function copyFileAtomic(source: string, target: string, mode: number): Promise<boolean> {
  if ((await digestOf(target)) === (await digestOf(source))) {
    await chmod(target, mode);
    return false;
  }
  const dir = dirname(target);
  await mkdir(dir, { recursive: true, mode: 0o755 });
  const temp = join(dir, `.${basename(target)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    await copyFile(source, temp);
    const handle = await open(temp, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    await chmod(temp, mode);
    await rename(temp, target);
    return true;
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

/** SHA-256 of a file's content (streamed: the plugin executable is ~110 MB), or undefined when absent. */
async function digestOf(path: string): Promise<string | undefined> {
  const hash = createHash('sha256');
  try {
    for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  return hash.digest('hex');
}
