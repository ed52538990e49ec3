/**
 * The write queue of one busy IPAMBlock, for the batching decorator (batching.ts,
 * docs/design-core.md §Batched block writes): the block's latest speculative state, the callers
 * whose changes are in the UPDATE in flight, and the callers queued on top of it. The queue never
 * waits on a caller — only on the inner UPDATE — so a caller that stops waiting (its signal fired)
 * cannot hold it up; its queued change leaves the queue (batching.ts #drop).
 */
import type { IPAMBlock } from '../resources.ts';

/** One accepted update: settled once, with the block as written or the batch's error. */
export interface Waiter {
  resolve(block: IPAMBlock): void;
  reject(error: Error): void;
  /**
   * The speculative state this change was laid on, and its token; undefined when it is the first
   * change of an idle block (laid on the server's state, not kept). Restored when the caller's
   * signal fires while the change is queued.
   */
  before?: { readonly state: IPAMBlock; readonly token: string };
  /** What this change does against the state it was laid on (batching.ts: one UPDATE, each ordinal once). */
  touched?: Touched;
}

/** A busy block: a write in flight or held after one (paceMs), maybe changes queued on top. */
export interface BusyBlock {
  readonly name: string;
  /** The resourceVersion the next UPDATE carries: the block as last read or written (real). */
  baseVersion: string;
  /** The latest speculative state: every accepted change, written or not (its rv: `token`). */
  state: IPAMBlock;
  /** The token standing for `state` (never a real resourceVersion). */
  token: string;
  /** True while an UPDATE is in flight. */
  sending: boolean;
  /** Callers whose changes the UPDATE in flight carries. */
  inFlight: Waiter[];
  /** Callers accepted since that UPDATE was sent. */
  queued: Waiter[];
  /** Told once the block is idle again (deletes with preconditions, unconditional updates). */
  readonly onIdle: Set<() => void>;
  /** Told once the queued changes are sent (or the block goes idle): a change that could not join them. */
  readonly onSend: Set<() => void>;
}

/** Marks a token: `<resourceVersion>~<n>`. etcd's resourceVersions are decimal digits. */
const TOKEN_MARK = '~';

/** True when `version` is a token of this process's decorator, not a server's resourceVersion. */
export function isToken(version: string | undefined): boolean {
  return version !== undefined && version.includes(TOKEN_MARK);
}

/** Mints tokens `<base>~<n>`, n counting up per decorator (unique within it). */
export function tokenMinter(): (base: string) => string {
  let n = 0;
  return (base) => `${base}${TOKEN_MARK}${++n}`;
}

/** `block` with `resourceVersion` set (a copy; metadata copied, the rest shared). */
export function withVersion(block: IPAMBlock, resourceVersion: string): IPAMBlock {
  return { ...block, metadata: { ...block.metadata, resourceVersion } };
}

/**
 * A waiter settled at most once; it rejects with the signal's reason when `signal` fires first,
 * after telling `aborted` (which drops the change when it is still queued).
 */
export function waiterFor(
  signal: AbortSignal | undefined,
  aborted: (waiter: Waiter) => void,
): { waiter: Waiter; promise: Promise<IPAMBlock> } {
  let waiter!: Waiter;
  const promise = new Promise<IPAMBlock>((resolve, reject) => {
    let settled = false;
    const onAbort = (): void =>
      finish(() => {
        aborted(waiter);
        reject(signal?.reason as Error);
      });
    const finish = (settle: () => void): void => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      settle();
    };
    waiter = {
      resolve: (block) => finish(() => resolve(structuredClone(block))),
      reject: (error) => finish(() => reject(error)),
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
  return { waiter, promise };
}

/** Resolves once `busy` is idle (at once when `busy` is undefined); rejects when `signal` fires. */
export function idleOf(busy: BusyBlock | undefined, signal: AbortSignal | undefined): Promise<void> {
  return busy === undefined ? Promise.resolve() : told(busy.onIdle, signal);
}

/**
 * Resolves once `busy`'s queued changes are sent in an UPDATE, or it goes idle (the batching
 * decorator tells `onSend` then too); rejects when `signal` fires.
 */
export function sentOf(busy: BusyBlock, signal: AbortSignal | undefined): Promise<void> {
  return told(busy.onSend, signal);
}

/** Resolves when a callback added to `listeners` is called; rejects when `signal` fires first. */
function told(listeners: Set<() => void>, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason as Error);
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      listeners.delete(onTold);
      reject(signal?.reason as Error);
    };
    const onTold = (): void => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    };
    listeners.add(onTold);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** What one change does to a block's allocations and sequence (see {@link touchedBy}). */
export interface Touched {
  /** Ordinals added, removed, or re-allocated (another handle or sequence). */
  readonly ordinals: ReadonlySet<string>;
  /** It adds an allocation. */
  readonly allocates: boolean;
  /** It writes the sequence down (a release repairing an unsafe sequence, docs/design-core.md §Frozen blocks). */
  readonly lowersSequence: boolean;
}

/**
 * What `after` changes against `before`. An allocation is the same when its handle and sequence
 * are (the sequence is unique per allocation: a re-allocation always takes a new one).
 */
export function touchedBy(before: IPAMBlock, after: IPAMBlock): Touched {
  const was = before.spec.allocations;
  const now = after.spec.allocations;
  const ordinals = new Set<string>();
  let allocates = false;
  for (const key of Object.keys(was)) {
    const a = was[key];
    const b = now[key];
    if (!b || !a || a.handle !== b.handle || a.sequence !== b.sequence) ordinals.add(key);
  }
  for (const key of Object.keys(now))
    if (!(key in was) || ordinals.has(key)) {
      ordinals.add(key);
      allocates = true;
    }
  return { ordinals, allocates, lowersSequence: after.spec.sequence < before.spec.sequence };
}

/**
 * Why `next` cannot join the UPDATE that `queued` will make, or undefined when it can: the
 * admission policy admits one change per ordinal per write (an entry changed in place is refused,
 * so is an ordinal allocated and released twice), and a sequence written down only by a write
 * that adds no allocation.
 */
export function cannotJoin(queued: readonly Touched[], next: Touched): string | undefined {
  const twice = new Set(queued.flatMap((t) => [...t.ordinals].filter((k) => next.ordinals.has(k))));
  if (twice.size > 0) return `ordinal(s) ${[...twice].join(', ')} change in an UPDATE not yet sent`;
  const together = [...queued, next];
  if (together.some((t) => t.lowersSequence) && together.some((t) => t.allocates))
    return 'a sequence written down and an allocation would share an UPDATE';
  return undefined;
}
