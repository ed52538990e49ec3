/**
 * What every allocator operation runs with: the datastore, an injected clock and random source,
 * a sleep for backoff, counters, and the retry bound. Also the compare-and-swap backoff.
 */
import type { Datastore } from '../datastore/datastore.ts';
import { abortable, withSignal } from '../datastore/with-signal.ts';

/** Counters an operation adds to; pass one object to several calls to accumulate. */
export interface AllocatorStats {
  /** Writes that lost a compare-and-swap (409 Conflict) or a delete precondition. */
  conflicts: number;
  /** Re-reads + new attempts after a conflict. */
  retries: number;
  /** Blocks created by a claim. */
  claims: number;
  /** Claim CREATEs that found the CIDR already taken (AlreadyExists). */
  claimCollisions: number;
  /** Addresses allocated from another node's block. */
  borrows: number;
  /** Empty blocks deleted. */
  blocksReleased: number;
  /** Dual-stack rollbacks (one family succeeded, the other failed). */
  rollbacks: number;
}

/** A zeroed stats object. */
export function newStats(): AllocatorStats {
  return {
    conflicts: 0,
    retries: 0,
    claims: 0,
    claimCollisions: 0,
    borrows: 0,
    blocksReleased: 0,
    rollbacks: 0,
  };
}

/** Options every allocator entry point takes; all optional. */
export interface AllocatorOptions {
  /** ms since epoch; default Date.now. */
  clock?: () => number;
  /** uniform in [0, 1); default Math.random. Drives backoff jitter and borrow start points. */
  random?: () => number;
  /** default: a real timer. Tests pass a fake to run without waiting. */
  sleep?: (ms: number) => Promise<void>;
  /** Counters to add to. */
  stats?: AllocatorStats;
  /**
   * Compare-and-swap attempts per write before RetriesExhaustedError. Default 100 (Calico's
   * datastoreRetries): 50 racing writers on one block all finish within it.
   */
  maxRetries?: number;
  /**
   * The caller's budget (e.g. the CNI plugin's time budget). Once it has fired the operation
   * sends nothing more — no read, no write, no retry, no rollback — and rejects with
   * `signal.reason`; a request in flight is abandoned (a write already sent may still land: it
   * was sent within the budget). What an aborted operation already wrote stays (an aborted
   * dual-stack ADD can keep its first family: the runtime's DEL after the failed ADD releases
   * it). Bound to every datastore call (datastore/with-signal.ts) and to the backoff sleep.
   * Default: none.
   */
  signal?: AbortSignal;
  /**
   * Told when a dual-stack rollback left addresses allocated (their release threw, or their
   * block could not be written): the addresses, and the error. The request's own outcome is
   * still returned / thrown; the runtime's DEL after the failed ADD releases them. Callers log
   * it (the CNI plugin does). Default: none.
   */
  onRollbackFailure?: (failure: RollbackFailure) => void;
  /**
   * How long (`waitMs`, ms) a claim the claims admission policy refuses because the controller
   * has not yet listed the pool (the first seconds after an install or a pool's creation) waits
   * for the list, retrying its CREATE (250 ms doubling to 2 s, on `sleep`: default a real timer,
   * not the backoff `sleep` above) until this bound or `signal`; then the refusal is the answer.
   * Default: no wait, refused at once. The node agent, a long-lived server whose calls carry their
   * client's deadline, waits; the direct path does not.
   */
  unlistedPool?: { readonly waitMs: number; readonly sleep?: (ms: number) => Promise<void> };
}

/** What a failed dual-stack rollback left allocated. */
export interface RollbackFailure {
  /** Canonical addresses still allocated to the handle. */
  addresses: string[];
  handle: string;
  error: Error;
}

/** Options resolved to values. */
export interface Context {
  readonly ds: Datastore;
  readonly clock: () => number;
  readonly random: () => number;
  readonly sleep: (ms: number) => Promise<void>;
  readonly stats: AllocatorStats;
  readonly maxRetries: number;
  /** The caller's signal, already bound to `ds` and `sleep`. */
  readonly signal: AbortSignal | undefined;
  readonly onRollbackFailure: ((failure: RollbackFailure) => void) | undefined;
  /** AllocatorOptions.unlistedPool, its sleep bound to `signal`. */
  readonly unlistedPool: { readonly waitMs: number; readonly sleep: (ms: number) => Promise<void> };
}

export function contextOf(ds: Datastore, options: AllocatorOptions = {}): Context {
  const { signal } = options;
  const sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  return {
    ds: withSignal(ds, signal),
    clock: options.clock ?? Date.now,
    random: options.random ?? Math.random,
    sleep: signal === undefined ? sleep : (ms) => abortable(sleep(ms), signal),
    stats: options.stats ?? newStats(),
    maxRetries: options.maxRetries ?? 100,
    signal,
    onRollbackFailure: options.onRollbackFailure,
    unlistedPool: {
      waitMs: options.unlistedPool?.waitMs ?? 0,
      sleep: (ms) =>
        abortable(
          (options.unlistedPool?.sleep ?? ((t) => new Promise((resolve) => setTimeout(resolve, t))))(ms),
          signal,
        ),
    },
  };
}

// 5 ms: about one API-server write round trip (~8 ms measured). 1 s cap: 50 writers racing for
// one block need a window of ~50 round trips to stop colliding; a smaller cap keeps them
// colliding and floods the API server with failed writes and re-reads.
const BACKOFF_BASE_MS = 5;
const BACKOFF_CAP_MS = 1000;

/** Waits a "full jitter" exponential backoff before retry number `attempt` (1-based). */
export async function backoff(ctx: Context, attempt: number): Promise<void> {
  const ceiling = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** Math.min(attempt, 16));
  await ctx.sleep(Math.floor(ctx.random() * ceiling));
}
