/**
 * The node's deletion queue (docs/design-plugin.md §Deletion queue): a DEL that neither the node
 * agent nor the API server could serve — the plugin's credential refused (401/403, TLS), the
 * kubeconfig unreadable, the API server unreachable or out of time — is written here by the
 * direct path and answered success, because runtimes expect DEL to succeed (CNI SPEC §DEL;
 * Cilium's `plugins/cilium-cni/lib/deletion_queue.go` is the model). The node agent replays it
 * ({@link replayDeletionQueue}) once it serves DEL, releasing by handle: a handle already
 * released answers 0, so a replay is idempotent.
 *
 * On disk: one JSON file per attachment, named by the sha256 of its handle (at most one entry per
 * attachment; a repeated DEL rewrites it), in a directory of mode 0700, each file 0600, written
 * whole to a temporary name, fsynced, renamed into place and the directory fsynced: a reader
 * sees a complete entry or none, and an answered DEL survives a crash or a reboot. Bounded: past
 * {@link MAX_QUEUED} entries a new one is refused ({@link DeletionQueueFullError}), never dropped.
 * Uses node:fs only (synchronous: the plugin's process lives for one call).
 */
import { createHash } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  fsyncSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import type { AttachmentRef, DelCall, DelOutcome } from '../node-ipam/service-types.ts';
import { ensureDir } from './ensure-dir.ts';
import { CniCode, isCniError } from './errors.ts';

/**
 * At most this many entries (10,000: one per sandbox the runtime deleted while the agent and the
 * API server were away; each a few hundred bytes, so at most a few MB on the host).
 */
const MAX_QUEUED = 10_000;

/**
 * The queue's directory: `del-queue` beside the agent's socket (`ipam.agentSocket` of the netconf,
 * `--ipam-socket` of the agent), e.g. /var/run/blockipam/agent/del-queue. That directory is the
 * agent's own, root-only (0700) and mounted into the agent's pod at its host path, so the plugin
 * writes where the agent replays. It does not outlive a reboot, and need not: the runtime's
 * sandboxes do not either, and an allocation whose pod is gone is the controller's leak GC's.
 */
export const deletionQueueDirOf = (agentSocket: string): string => join(dirname(agentSocket), 'del-queue');

/** One queued DEL: all the release needs (handle inputs, node, pod UID) and why it was queued. */
export interface QueuedDel {
  /** The attachment; its handle is `<network>.<containerID>.<ifname>`. */
  readonly attachment: AttachmentRef;
  /** The node the DEL named. */
  readonly node: string;
  /** K8S_POD_UID when the runtime gave one (an allocation of another pod UID is left alone). */
  readonly podUID?: string;
  /** When it was queued, ISO 8601. */
  readonly queuedAt: string;
  /** The failure that made the direct path queue it. */
  readonly reason: string;
}

/** The queue is full: the DEL fails (the runtime retries) rather than being dropped. */
export class DeletionQueueFullError extends Error {
  override readonly name = 'DeletionQueueFullError';
}

export function isDeletionQueueFullError(e: unknown): e is DeletionQueueFullError {
  return e instanceof Error && e.name === 'DeletionQueueFullError';
}

/**
 * Why a DEL that failed with `e` may be queued, or undefined when it must fail as it is: a
 * CniError 105 (credential refused, RBAC denial, TLS) or 11 (API server unreachable, kubeconfig
 * unreadable, compare-and-swap exhausted), or the call's time budget running out. A request the
 * API server or an admission policy rejected (106, 107), bad input (1–7) and internal errors keep
 * their CNI error: replaying them later would fail the same way.
 */
export function queueableDelFailure(e: unknown): string | undefined {
  if (isCniError(e) && (e.code === CniCode.authFailed || e.code === CniCode.tryAgainLater))
    return e.details ? `${e.message}: ${e.details}` : e.message;
  if (e instanceof Error && (e.name === 'TimeoutError' || e.name === 'AbortError'))
    return `time budget exceeded: ${e.message}`;
  return undefined;
}

/** The entry's file name: the sha256 of its handle (fixed length, no path characters). */
export function queuedFileName(a: AttachmentRef): string {
  const handle = `${a.network}.${a.containerID}.${a.ifname}`;
  return `${createHash('sha256').update(handle).digest('hex')}.json`;
}

/**
 * Makes `dir` (and its parents) and leaves it mode 0700, whatever it had: entries name pods and
 * a writer elsewhere could make the agent release what it chose.
 */
function ensureQueueDir(dir: string): void {
  ensureDir(dir, 0o700); // never a recursive mkdir on a netconf's path (ensure-dir.ts)
  if ((statSync(dir).mode & 0o077) !== 0) chmodSync(dir, 0o700);
}

/** The entries' file names in `dir` (no temporaries); none when it does not exist. */
export function queuedFiles(dir: string): string[] {
  try {
    return readdirSync(dir).filter((f) => f.endsWith('.json') && !f.startsWith('.'));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
}

/**
 * Records `entry` durably (temporary file 0600, fsync, rename, directory fsync). An entry for the
 * same attachment is replaced (it does not count again).
 * @param max the bound (default {@link MAX_QUEUED})
 * @throws DeletionQueueFullError when `max` entries are queued already; an fs error when the
 *   directory cannot be made or written (the DEL then fails with its original error)
 */
export function enqueueDel(dir: string, entry: QueuedDel, max = MAX_QUEUED): string {
  ensureQueueDir(dir);
  const name = queuedFileName(entry.attachment);
  const files = queuedFiles(dir);
  if (files.length >= max && !files.includes(name))
    throw new DeletionQueueFullError(
      `deletion queue ${dir} is full (${files.length} entries): the node agent has not replayed it; start the agent or release by hand (ipamctl release)`,
    );
  const tmp = join(dir, `.${name}.${process.pid}.tmp`);
  const fd = openSync(tmp, 'w', 0o600);
  try {
    writeSync(fd, `${JSON.stringify(entry)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(tmp, join(dir, name));
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
  syncDir(dir);
  return name;
}

/** fsync of a directory: the rename or unlink in it survives a crash. */
function syncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The entry in `file`, or why it is not one (not JSON, a field missing). */
function readQueued(dir: string, file: string): QueuedDel | string {
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(join(dir, file), 'utf8'));
  } catch (e) {
    return `unreadable: ${(e as Error).message}`;
  }
  const d = doc as Partial<QueuedDel> | null;
  const a = d?.attachment;
  const str = (v: unknown): v is string => typeof v === 'string' && v !== '';
  if (!d || !a || !str(a.network) || !str(a.containerID) || !str(a.ifname) || !str(d.node))
    return 'not a queued DEL (attachment.network, .containerID, .ifname and node are required)';
  return d as QueuedDel;
}

/** One file of the queue as read: its entry, or why it is not one (unreadable, garbled). */
export type QueuedRead =
  { readonly file: string; readonly entry: QueuedDel } | { readonly file: string; readonly error: string };

/**
 * The queue's entries, oldest first (an entry without a `queuedAt` sorts first): each file parsed,
 * a file that is not an entry (unreadable, not JSON, a field missing) returned with why, never
 * thrown. Writes nothing: the agent's replay and `ipamctl check` read the queue through it.
 * @returns none when `dir` does not exist
 * @throws an fs error when `dir` cannot be listed (EACCES: not root; ENOTDIR)
 */
export function readDeletionQueue(dir: string): QueuedRead[] {
  const reads = queuedFiles(dir).map((file): QueuedRead => {
    const entry = readQueued(dir, file);
    return typeof entry === 'string' ? { file, error: entry } : { file, entry };
  });
  const at = (r: QueuedRead): string =>
    'entry' in r && typeof r.entry.queuedAt === 'string' ? r.entry.queuedAt : '';
  return reads.sort((x, y) => at(x).localeCompare(at(y)));
}

/** What one entry's replay did. */
export type ReplayResult =
  | { readonly file: string; readonly entry: QueuedDel; readonly released: number }
  | { readonly file: string; readonly entry?: QueuedDel; readonly error: string };

export interface ReplayOptions {
  readonly dir: string;
  /** The release: the node IPAM service's DEL (idempotent by handle). */
  readonly del: (call: DelCall) => Promise<DelOutcome>;
  /** The node to release for (this host's; an entry's own `node` is only what the DEL named). */
  readonly node: string;
  /** Told of each entry as it is done (a log line, the counters). */
  readonly onResult?: (r: ReplayResult) => void;
}

/**
 * One pass over the queue, oldest first: each entry released through `del`; its file removed
 * (and the directory fsynced) after success, kept after a failure for the next pass. An entry
 * that is not one stays (and is reported each pass) for an operator to look at.
 * @returns each entry's result
 */
export async function replayDeletionQueue(o: ReplayOptions): Promise<ReplayResult[]> {
  const results: ReplayResult[] = [];
  for (const read of readDeletionQueue(o.dir)) {
    let r: ReplayResult;
    if ('error' in read) r = read;
    else {
      const { file, entry } = read;
      try {
        const { released } = await o.del({
          attachment: entry.attachment,
          node: o.node,
          ...(entry.podUID ? { podUID: entry.podUID } : {}),
        });
        unlinkSync(join(o.dir, file));
        syncDir(o.dir);
        r = { file, entry, released };
      } catch (e) {
        r = { file, entry, error: e instanceof Error ? e.message : String(e) };
      }
    }
    results.push(r);
    o.onResult?.(r);
  }
  return results;
}
