/**
 * The lock hand-off (docs/design-plugin.md §Host lock, "Hand-off"): what the last holder of the
 * host lock knew of its node's blocks when it released — the node's affine-block list after its
 * own writes, each block as the API server returned it (with its new resourceVersion). Written
 * under the lock, just before the release, to `<lockFile>.handoff.json`; read under the lock by
 * the next holder, so a burst of ADDs or DELs on one node sends one UPDATE per call instead of
 * LIST + UPDATE. Staleness is safe: every write is a compare-and-swap, so a block another writer
 * (the agent, the controller, a borrowing node) changed since costs one conflict and a re-read.
 *
 * Never throws: an absent, unreadable, corrupt, old or foreign file is no hand-off. Read with
 * O_NONBLOCK and O_NOFOLLOW, and only when it is a regular file of this process's user, not
 * writable by group or others, at most NODE_CACHE_MAX_BYTES (a FIFO, a device or a huge file
 * there never blocks or bloats the lock holder); every block must pass core's block invariants.
 * Trust: whoever can write the file as root can make the next holder decide on forged blocks,
 * as with the node cache and the cacheDir's other files (root on the node owns its addresses).
 */
import { closeSync, constants, fstatSync, openSync, readSync, unlinkSync } from 'node:fs';
import { checkBlockInvariants, NODE_CACHE_MAX_BYTES, type IPAMBlock } from 'blockipam/core';
import { writeFileAtomic } from './atomic-file.ts';

/**
 * 5 s: a hand-off serves the holder right after the one that wrote it (a burst: it is
 * milliseconds old). Older, the node's blocks have likely moved on, and a read is cheaper than a
 * conflict plus a read.
 */
export const handoffMaxAgeMs = 5_000;

/** The hand-off's file: next to the lock file it belongs to. */
export const handoffFileOf = (lockFile: string): string => `${lockFile}.handoff.json`;

interface HandoffDocument {
  readonly version: 1;
  /** Which cluster (the plugin's cache key: API server URL + kubeconfig path). */
  readonly cluster: string;
  readonly node: string;
  /** Written at, ms since the epoch. */
  readonly at: number;
  readonly blocks: readonly IPAMBlock[];
}

export interface HandoffScope {
  readonly file: string;
  readonly cluster: string;
  readonly node: string;
}

/** The node's blocks the last holder handed off, or undefined. @param nowMs default Date.now() */
export function readHandoff(scope: HandoffScope, nowMs = Date.now()): IPAMBlock[] | undefined {
  let doc: Partial<HandoffDocument>;
  try {
    const text = readOwnSmallFile(scope.file);
    if (text === undefined) return undefined;
    doc = JSON.parse(text) as Partial<HandoffDocument>;
  } catch {
    return undefined;
  }
  if (doc === null || typeof doc !== 'object') return undefined;
  if (doc.version !== 1 || doc.cluster !== scope.cluster || doc.node !== scope.node) return undefined;
  if (typeof doc.at !== 'number' || nowMs - doc.at > handoffMaxAgeMs || doc.at > nowMs + 1_000)
    return undefined;
  const blocks: unknown = doc.blocks;
  if (!Array.isArray(blocks)) return undefined;
  return (blocks as unknown[]).every(isSoundBlock) ? (blocks as IPAMBlock[]) : undefined;
}

/** A block as the API server stores it: its fields' types, and core's invariants hold. */
function isSoundBlock(b: unknown): boolean {
  const block = b as Partial<IPAMBlock> | null;
  if (
    typeof block?.metadata?.name !== 'string' ||
    typeof block.metadata.resourceVersion !== 'string' ||
    typeof block.spec?.cidr !== 'string' ||
    block.spec.allocations === null ||
    typeof block.spec.allocations !== 'object'
  )
    return false;
  try {
    return checkBlockInvariants(block as IPAMBlock).length === 0;
  } catch {
    return false;
  }
}

/**
 * The file's text when it is a small regular file of ours (see the file comment), else
 * undefined. Also the lock queue's reader (lock-queue.ts).
 */
export function readOwnSmallFile(path: string): string | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
    const st = fstatSync(fd);
    const uid = process.getuid?.();
    if (!st.isFile() || st.size > NODE_CACHE_MAX_BYTES || (st.mode & 0o022) !== 0) return undefined;
    if (uid !== undefined && st.uid !== uid) return undefined;
    const buffer = Buffer.allocUnsafe(st.size);
    let at = 0;
    for (let n = -1; at < st.size && n !== 0; at += n) n = readSync(fd, buffer, at, st.size - at, at);
    return buffer.toString('utf8', 0, at);
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Writes the hand-off (atomically); a failure only costs the next holder a read. */
export function writeHandoff(scope: HandoffScope, blocks: readonly IPAMBlock[], nowMs = Date.now()): void {
  const doc: HandoffDocument = { version: 1, cluster: scope.cluster, node: scope.node, at: nowMs, blocks };
  try {
    writeFileAtomic(scope.file, JSON.stringify(doc), 0o600);
  } catch {
    dropHandoff(scope);
  }
}

/** Removes the hand-off (a holder that wrote blocks without knowing the node's full list). */
export function dropHandoff(scope: HandoffScope): void {
  try {
    unlinkSync(scope.file);
  } catch {
    // absent already, or not ours to remove: the next holder's checks reject it anyway
  }
}
