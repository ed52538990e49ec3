/**
 * The host lock's queue (docs/design-plugin.md §Host lock, "Combining"). An ADD that finds the
 * lock held leaves its request — decided but for the address: handle, pod, labels, pools,
 * families — in `<lockFile>.queue/<id>.req` before it waits; a DEL its release (handle, node,
 * pod UID). The holder, after its own step and still under the lock, claims queued requests by
 * renaming each `<id>.req` to `<id>.taken`, serves them together (backend/combine.ts) and
 * answers each in `<id>.res` before it releases. A waiter reads its answer once it holds the lock, or when its wait timed
 * out; a request nobody answered it decides itself, as before.
 *
 * Exactly one of the holder's claim and the waiter's withdrawal succeeds (both are a rename or
 * unlink of `<id>.req`): a withdrawn request is never served, a claimed one is always answered
 * (addresses, or "not served") unless the holder dies first.
 *
 * Never throws on the holder's side: an unreadable, corrupt, foreign, expired request, or one
 * whose waiter is gone, is skipped (and the last three removed). Read with the hand-off's rules
 * (a small regular file of this user, not writable by group or others: handoff-file.ts); trust
 * is that of `cacheDir`'s other files.
 */
import { readdirSync, renameSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { AssignedAddress, AutoAssignRequest } from 'blockipam/core';
import { writeFileAtomic } from './atomic-file.ts';
import { ensureDir } from './ensure-dir.ts';
import { readOwnSmallFile } from './handoff-file.ts';

/** The queue's directory: next to the lock file it belongs to. */
export const queueDirOf = (lockFile: string): string => `${lockFile}.queue`;

/**
 * At most this many requests per holder. 128: two /26 blocks' worth; the holder's allocations
 * are in memory (about a millisecond each), its writes one UPDATE per block touched.
 */
export const MAX_TAKEN = 128;

/** An answer or claim older than this has lost its waiter (10 min: past any lock wait). */
const STALE_MS = 600_000;

/** A request must leave its waiter this long (ms) before its deadline to be taken. */
const DEADLINE_MARGIN_MS = 2_000;

export interface QueueScope {
  /** The queue's directory ({@link queueDirOf}). */
  readonly dir: string;
  /** Which cluster (the plugin's cache key: API server URL + kubeconfig path). */
  readonly cluster: string;
  readonly node: string;
}

/** What the holder allocates for a waiter: core's request without the snapshot (the holder's serves). */
export type QueuedAssign = Omit<AutoAssignRequest, 'snapshot'>;

/** What the holder releases for a waiting DEL: core's releaseByHandle arguments. */
export interface QueuedRelease {
  readonly handle: string;
  readonly node: string;
  /** Free only allocations of this pod UID (as the DEL's own release would). */
  readonly podUID?: string;
}

/** A waiter's work: an ADD's assignment or a DEL's release. */
export type QueuedWork =
  | { readonly kind: 'add'; readonly request: QueuedAssign }
  | { readonly kind: 'del'; readonly release: QueuedRelease };

/** A queued request as the holder takes it. */
export type QueuedRequest = { readonly id: string } & QueuedWork;

/** Addresses the holder assigned to a queued request. */
export interface ServedAddresses {
  readonly ipv4?: AssignedAddress;
  readonly ipv6?: AssignedAddress;
}

interface RequestDocument {
  readonly version: 1;
  readonly id: string;
  readonly cluster: string;
  readonly node: string;
  /** The waiting process. */
  readonly pid: number;
  /** ms since the epoch when the waiter stops waiting for the lock. */
  readonly deadline: number;
  readonly work: QueuedWork;
}

/** The holder's answer; with neither field: not served (the waiter decides itself). */
export interface QueueAnswer {
  /** An ADD's addresses. */
  readonly served?: ServedAddresses;
  /** A DEL's: how many addresses were released (0: the handle held none). */
  readonly released?: number;
}

interface AnswerDocument extends QueueAnswer {
  readonly version: 1;
  readonly id: string;
}

/** A waiter's side of the queue: one request. */
export interface Ticket {
  readonly id: string;
  /** Whether the request was written (by {@link Ticket.enqueue}). */
  readonly queued: boolean;
  /** Writes the request; a failure only means it is not queued. */
  enqueue(): void;
  /**
   * Withdraws the request. @returns 'withdrawn' (nobody took it), 'taken' (a holder claimed
   * it: its answer is or will be there) or 'none' (never queued)
   */
  withdraw(): 'withdrawn' | 'taken' | 'none';
  /** The holder's answer (served or not), or undefined while there is none. */
  answer(): QueueAnswer | undefined;
  /** Removes every file of this request (request, claim, answer); nothing when never queued. */
  remove(): void;
}

const ID = /^[0-9]{1,10}-[0-9a-f]{32}$/;
const ALL_KINDS: ReadonlySet<QueuedWork['kind']> = new Set(['add', 'del']);

/**
 * A new ticket for `request` (nothing written until {@link Ticket.enqueue}).
 * @param deadlineMs when the waiter stops waiting, ms since the epoch
 */
export function ticketFor(scope: QueueScope, work: QueuedWork, deadlineMs: number): Ticket {
  const id = `${process.pid}-${globalThis.crypto.randomUUID().replaceAll('-', '')}`;
  const path = (ext: string): string => join(scope.dir, `${id}.${ext}`);
  let queued = false;
  return {
    id,
    get queued() {
      return queued;
    },
    enqueue() {
      const doc: RequestDocument = {
        version: 1,
        id,
        cluster: scope.cluster,
        node: scope.node,
        pid: process.pid,
        deadline: deadlineMs,
        work,
      };
      try {
        ensureDir(scope.dir, 0o700);
        writeFileAtomic(path('req'), JSON.stringify(doc), 0o600);
        queued = true;
      } catch {
        // not queued: this ADD decides itself once it holds the lock
      }
    },
    withdraw() {
      if (!queued) return 'none';
      try {
        unlinkSync(path('req'));
        return 'withdrawn';
      } catch {
        return 'taken';
      }
    },
    answer() {
      const doc = readAnswer(path('res'));
      if (doc?.id !== id) return undefined;
      return {
        ...(doc.served ? { served: doc.served } : {}),
        ...(typeof doc.released === 'number' ? { released: doc.released } : {}),
      };
    },
    remove() {
      if (!queued) return;
      for (const ext of ['req', 'taken', 'res'])
        try {
          unlinkSync(path(ext));
        } catch {
          // not there
        }
    },
  };
}

function readAnswer(file: string): AnswerDocument | undefined {
  try {
    const text = readOwnSmallFile(file);
    const doc = text === undefined ? undefined : (JSON.parse(text) as Partial<AnswerDocument> | null);
    return doc?.version === 1 && typeof doc.id === 'string' ? (doc as AnswerDocument) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The holder's side: claims up to `limit` live requests of this scope, nearest deadline first,
 * and prunes expired ones and those of dead waiters. Never throws.
 * @param kinds what this holder can serve (a DEL holder has no pool snapshot: releases only)
 * @param alive whether a waiting process exists (default: signal 0)
 */
export function takeQueued(
  scope: QueueScope,
  o: {
    kinds?: ReadonlySet<QueuedWork['kind']>;
    limit?: number;
    nowMs?: number;
    alive?: (pid: number) => boolean;
  } = {},
): QueuedRequest[] {
  const { kinds = ALL_KINDS, limit = MAX_TAKEN, nowMs = Date.now(), alive = processAlive } = o;
  let names: string[];
  try {
    names = readdirSync(scope.dir);
  } catch {
    return [];
  }
  const live: RequestDocument[] = [];
  for (const name of names) {
    const file = join(scope.dir, name);
    if (!name.endsWith('.req')) {
      if (/\.(?:taken|res)$/.test(name)) removeIfStale(file, nowMs);
      continue;
    }
    const doc = readRequest(file, name.slice(0, -'.req'.length));
    if (!doc) {
      removeIfStale(file, nowMs);
      continue;
    }
    if (doc.cluster !== scope.cluster || doc.node !== scope.node) continue; // another network's
    if (!kinds.has(doc.work.kind)) continue;
    if (doc.deadline < nowMs + DEADLINE_MARGIN_MS || !alive(doc.pid)) {
      tryUnlink(file);
      continue;
    }
    live.push(doc);
  }
  live.sort((a, b) => a.deadline - b.deadline);
  const taken: QueuedRequest[] = [];
  for (const doc of live) {
    if (taken.length >= limit) break;
    try {
      renameSync(join(scope.dir, `${doc.id}.req`), join(scope.dir, `${doc.id}.taken`));
    } catch {
      continue; // withdrawn meanwhile (its wait timed out)
    }
    taken.push({ id: doc.id, ...doc.work });
  }
  return taken;
}

/** Answers a taken request (`{}`: not served). Never throws. */
export function answerQueued(scope: QueueScope, id: string, answer: QueueAnswer): void {
  const doc: AnswerDocument = { version: 1, id, ...answer };
  try {
    writeFileAtomic(join(scope.dir, `${id}.res`), JSON.stringify(doc), 0o600);
  } catch {
    // unanswered: the waiter decides itself under the lock (a served address it then finds in
    // use is refused as a duplicate, and the runtime's DEL frees it)
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function tryUnlink(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // gone already
  }
}

function removeIfStale(file: string, nowMs: number): void {
  try {
    if (statSync(file).mtimeMs < nowMs - STALE_MS) unlinkSync(file);
  } catch {
    // gone already
  }
}

const isStr = (v: unknown): v is string => typeof v === 'string';
const isStrMap = (v: unknown): v is Record<string, string> =>
  v !== null && typeof v === 'object' && !Array.isArray(v) && Object.values(v).every(isStr);

function isRelease(v: unknown, node: string): boolean {
  const r = v as Partial<QueuedRelease> | null | undefined;
  return (
    r !== null &&
    typeof r === 'object' &&
    isStr(r.handle) &&
    r.node === node &&
    (r.podUID === undefined || isStr(r.podUID))
  );
}

/** The request in `file` when it is well formed and its id is `id`, else undefined. */
function readRequest(file: string, id: string): RequestDocument | undefined {
  let doc: Partial<RequestDocument> | null;
  try {
    const text = readOwnSmallFile(file);
    if (text === undefined) return undefined;
    doc = JSON.parse(text) as Partial<RequestDocument> | null;
  } catch {
    return undefined;
  }
  if (doc === null || typeof doc !== 'object' || doc.version !== 1 || doc.id !== id || !ID.test(id))
    return undefined;
  if (!isStr(doc.cluster) || !isStr(doc.node) || !Number.isInteger(doc.pid) || (doc.pid ?? 0) <= 0)
    return undefined;
  if (typeof doc.deadline !== 'number') return undefined;
  const w = doc.work as Partial<{ kind: string; request: unknown; release: unknown }> | null | undefined;
  if (w === null || typeof w !== 'object') return undefined;
  if (w.kind === 'del') return isRelease(w.release, doc.node) ? (doc as RequestDocument) : undefined;
  if (w.kind !== 'add') return undefined;
  const r = w.request as Partial<QueuedAssign> | null | undefined;
  if (r === null || typeof r !== 'object' || !isStr(r.handle) || r.node !== doc.node) return undefined;
  if (r.network !== undefined && !isStr(r.network)) return undefined;
  if (typeof r.ipv4 !== 'boolean' || typeof r.ipv6 !== 'boolean') return undefined;
  if (r.nodeLabels !== undefined && !isStrMap(r.nodeLabels)) return undefined;
  if (r.namespaceLabels !== undefined && !isStrMap(r.namespaceLabels)) return undefined;
  if (r.pools !== undefined && !(Array.isArray(r.pools) && r.pools.every(isStr))) return undefined;
  if (r.pod !== undefined) {
    const p = r.pod as Partial<NonNullable<QueuedAssign['pod']>> | null;
    if (p === null || typeof p !== 'object' || !isStr(p.namespace) || !isStr(p.name)) return undefined;
    if (p.uid !== undefined && !isStr(p.uid)) return undefined;
  }
  return doc as RequestDocument;
}
