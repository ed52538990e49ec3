/**
 * host-local's store while a node is adopted from host-local (netconf `ipam.hostLocalStore`,
 * docs/design-adopt.md): while the store is set, an ADD still
 * running under the old conflist, or host-local after a rollback, must never hand out an address
 * blockipam handed out, nor blockipam one of theirs. host-local reserves an address by creating
 * `<store>/<address>` exclusively (O_EXCL) under its lock; blockipam does the same, so whichever
 * creates the file first holds the address:
 * - ADD: addresses whose file names another container are excluded; after the allocation each
 *   address is reserved with a file of blockipam's (`<containerID>\r\n<ifname>`, host-local's
 *   format, so host-local's DEL by container ID also releases it after a rollback); an address
 *   whose file another container created meanwhile is released again and the ADD tries anew.
 * - DEL: after the release, the container's files go (host-local's own release by container ID).
 * A file being written (created, content not yet there) reads as held by someone else.
 */
import { constants } from 'node:fs';
import { lstat, mkdir, open, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { formatIP, parseIP } from '../address/ip.ts';
import { parseHostLocalFile } from '../adopt/host-local-file.ts';
import type { HostLocalFile } from '../adopt/host-local-file.ts';

/** Who holds an address of the store. */
export interface StoreHolder {
  readonly containerID: string;
  readonly ifname: string;
}

/** A store entry named by an address that holds no valid record. */
export interface UnreadableEntry {
  /** The entry's name in the store directory. */
  readonly file: string;
  /** Canonical text of the address the name holds. */
  readonly address: string;
}

/** The store's files: address files read, and the entries whose content is no valid record. */
export interface StoreFiles {
  readonly files: readonly HostLocalFile[];
  /**
   * Entries empty (being written, or left by a SIGKILL between create and write), malformed, or
   * no regular file (a directory, a symlink, a FIFO: never followed nor opened): held, by no one
   * known.
   */
  readonly unreadable: readonly UnreadableEntry[];
}

/** Bytes of a record read at most: `<containerID>\r\n<ifname>` is far shorter. */
const MAX_RECORD = 4096;

/**
 * One entry's content: undefined when it is gone, no regular file, or cannot be read; at most
 * {@link MAX_RECORD} bytes, opened without following a symlink and without blocking on a FIFO.
 */
export async function readRecord(path: string): Promise<string | undefined> {
  const info = await lstat(path).catch(() => undefined);
  if (!info?.isFile()) return undefined;
  let handle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const buffer = Buffer.alloc(MAX_RECORD);
    const { bytesRead } = await handle.read(buffer, 0, MAX_RECORD, 0);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } catch {
    return undefined;
  } finally {
    await handle.close();
  }
}

/**
 * Lists and reads the store (`lock`, `last_reserved_ip.N` and other names that are no address are
 * skipped; an entry gone meanwhile too). A missing directory is an empty store.
 * @throws the fs error of an unreadable directory
 */
export async function readStoreFiles(dir: string): Promise<StoreFiles> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { files: [], unreadable: [] };
    throw error;
  }
  const files: HostLocalFile[] = [];
  const unreadable: UnreadableEntry[] = [];
  await Promise.all(
    names.map(async (name) => {
      const ip = parseIP(name);
      if (!ip) return;
      const path = join(dir, name);
      const content = await readRecord(path);
      const file = content === undefined ? undefined : parseHostLocalFile(name, content);
      if (file) files.push(file);
      else if (content !== undefined || (await lstat(path).catch(() => undefined)))
        unreadable.push({ file: name, address: formatIP(ip) });
    }),
  );
  return { files, unreadable };
}

/**
 * The store as address → holder, `undefined` for a file that is no valid record yet (held, by
 * no one known).
 * @throws as {@link readStoreFiles}
 */
export async function readStore(dir: string): Promise<Map<string, StoreHolder | undefined>> {
  const { files, unreadable } = await readStoreFiles(dir);
  const held = new Map<string, StoreHolder | undefined>(unreadable.map((u) => [u.address, undefined]));
  for (const f of files) held.set(f.address, { containerID: f.containerID, ifname: f.ifname });
  return held;
}

/** The addresses of `store` held by anyone but this attachment. */
export function heldByOthers(
  store: ReadonlyMap<string, StoreHolder | undefined>,
  containerID: string,
  ifname: string,
): string[] {
  return [...store]
    .filter(([, h]) => h === undefined || h.containerID !== containerID || h.ifname !== ifname)
    .map(([address]) => address);
}

/**
 * Reserves `addresses` for this attachment: each file created exclusively with host-local's
 * content, or found holding this attachment already (a repeated ADD).
 * @returns the addresses another container's file holds (their files left alone; the files this
 *   call created for the others are removed again), empty when all are reserved
 * @throws the fs error of a file that could not be created (those created are removed again)
 */
export async function reserveInStore(
  dir: string,
  addresses: readonly string[],
  containerID: string,
  ifname: string,
): Promise<string[]> {
  const created: string[] = [];
  const clashes: string[] = [];
  try {
    for (const address of addresses) {
      const path = join(dir, address);
      let handle;
      try {
        handle = await createExclusive(dir, path);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        const file = parseHostLocalFile(address, (await readRecord(path)) ?? '');
        if (file?.containerID !== containerID || file.ifname !== ifname) clashes.push(address);
        continue;
      }
      created.push(path);
      try {
        await handle.writeFile(`${containerID}\r\n${ifname}`);
      } finally {
        await handle.close();
      }
    }
  } catch (error) {
    await Promise.all(created.map((path) => rm(path, { force: true })));
    throw error;
  }
  if (clashes.length > 0) await Promise.all(created.map((path) => rm(path, { force: true })));
  return clashes;
}

/**
 * Creates `path` exclusively (0644), creating the store directory first when it is missing (as
 * host-local does: a node's tmpfs /run starts empty after a reboot).
 * @throws EEXIST when the entry exists; another fs error
 */
async function createExclusive(dir: string, path: string): ReturnType<typeof open> {
  try {
    return await open(path, 'wx', 0o644);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    await mkdir(dir, { recursive: true, mode: 0o755 });
    return await open(path, 'wx', 0o644);
  }
}

/**
 * Removes every file of the store holding this attachment (host-local's release by container ID;
 * an ID-only file counts for the default interface).
 * @returns the addresses released
 * @throws the fs error of an unreadable directory or a file that could not be removed
 */
export async function releaseFromStore(dir: string, containerID: string, ifname: string): Promise<string[]> {
  const { files } = await readStoreFiles(dir);
  const mine = files.filter((f) => f.containerID === containerID && f.ifname === ifname);
  await Promise.all(mine.map((f) => rm(join(dir, f.file), { force: true })));
  return mine.map((f) => f.address);
}
