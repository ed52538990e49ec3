/**
 * The leader-election loop (client-go tools/leaderelection's protocol; decisions in lease.ts).
 * A candidate tries every `retryPeriodMs` (× up to 1.2 jitter, as client-go); the leader renews
 * every `retryPeriodMs` and gives up when it has not renewed for `renewDeadlineMs` — shorter than
 * `leaseDurationMs`, so it stops acting before any other replica may take the lease. While
 * leading, `lead(leading, deposed)` runs (see run()); `leading` aborts when leadership is lost or
 * on shutdown, `deposed` only when it is lost, and the loop waits for `lead` to return before it releases the lease (holder cleared, 1 s) or competes
 * again. Defaults: client-go's 15 s / 10 s / 2 s.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { abortable, isAlreadyExists, isConflict } from 'blockipam/core';
import { decide, observe, releasedSpec } from './lease.ts';
import type { LeaseSpec, Observation } from './lease.ts';
import type { LeaseStore } from './lease-store.ts';

const DEFAULT_LEASE_DURATION_MS = 15_000;
const DEFAULT_RENEW_DEADLINE_MS = 10_000;
const DEFAULT_RETRY_PERIOD_MS = 2_000;
// 1.2: client-go's JitterFactor for the candidates' retry period (spreads replicas' tries).
const JITTER = 1.2;

export interface ElectorOptions {
  store: LeaseStore;
  /** Unique per replica (the pod name + a random suffix: a restarted pod is a new candidate). */
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  clock?: () => number;
  random?: () => number;
  /** Called on transitions and failed tries (logs, metrics). */
  onEvent?: (event: ElectorEvent) => void;
}

export type ElectorEvent =
  | { type: 'acquired'; transitions: number }
  | { type: 'lost'; reason: string }
  | { type: 'released' }
  | { type: 'waiting'; holder: string }
  | { type: 'try-failed'; error: unknown };

export class LeaderElector {
  readonly #o: Required<Omit<ElectorOptions, 'onEvent'>> & Pick<ElectorOptions, 'onEvent'>;
  #seen: Observation | undefined;
  #leading = false;
  #renewedAtMs = -Infinity;

  constructor(options: ElectorOptions) {
    const o = {
      leaseDurationMs: DEFAULT_LEASE_DURATION_MS,
      renewDeadlineMs: DEFAULT_RENEW_DEADLINE_MS,
      retryPeriodMs: DEFAULT_RETRY_PERIOD_MS,
      clock: Date.now,
      random: Math.random,
      ...options,
    };
    if (!(o.leaseDurationMs > o.renewDeadlineMs))
      throw new Error('leaseDuration must be greater than renewDeadline (client-go rule)');
    if (!(o.renewDeadlineMs > o.retryPeriodMs * JITTER))
      throw new Error('renewDeadline must be greater than retryPeriod × 1.2 (client-go rule)');
    this.#o = o;
  }

  /** True while leading and the last renewal is younger than the renew deadline. */
  get isLeader(): boolean {
    return this.#leading && this.#o.clock() - this.#renewedAtMs < this.#o.renewDeadlineMs;
  }

  /**
   * Competes until `signal` aborts; runs `lead` while leading. Releases the lease on shutdown.
   * `lead` gets two signals: `leading` aborts when leadership ends for any reason (lost, or
   * shutdown: start no new work); `deposed` aborts only when leadership is lost, at the very
   * moment `isLeader` turns false (the renew deadline after the last renewal: a timer re-armed by
   * each renewal, still armed while a shutting-down leader drains) — pass it to core calls, so a
   * deposed leader sends no request after it (one already sent is settled by its
   * preconditions), while a shutdown lets the write in flight finish.
   */
  async run(
    signal: AbortSignal,
    lead: (leading: AbortSignal, deposed: AbortSignal) => Promise<void>,
  ): Promise<void> {
    while (!signal.aborted) {
      if (!(await this.#acquire(signal))) break;
      const leading = new AbortController();
      const deposed = new AbortController();
      const lost = `lease not renewed within ${this.#o.renewDeadlineMs} ms`;
      let timer: NodeJS.Timeout | undefined;
      const arm = (): void => {
        clearTimeout(timer);
        const leftMs = this.#renewedAtMs + this.#o.renewDeadlineMs - this.#o.clock();
        timer = setTimeout(() => deposed.abort(new Error(lost)), Math.max(0, leftMs));
      };
      arm();
      const work = lead(leading.signal, deposed.signal).catch(() => undefined);
      const reason = await this.#renewUntilLost(signal, deposed.signal, arm, lost);
      leading.abort(new Error(reason));
      this.#leading = false;
      await work;
      clearTimeout(timer);
      if (signal.aborted) {
        await this.#release();
        break;
      }
      this.#o.onEvent?.({ type: 'lost', reason });
    }
  }

  async #acquire(signal: AbortSignal): Promise<boolean> {
    while (!signal.aborted) {
      if (await this.#tryAcquireOrRenew()) {
        this.#leading = true;
        this.#o.onEvent?.({ type: 'acquired', transitions: this.#seen?.spec.leaseTransitions ?? 0 });
        return true;
      }
      await sleep(this.#o.retryPeriodMs * (1 + this.#o.random() * (JITTER - 1)), signal);
    }
    return false;
  }

  /**
   * Renews every retry period (each success re-arms the deadline timer); returns why leadership
   * ended. Once `deposed` has fired, leadership is over even if a late renewal succeeds.
   */
  async #renewUntilLost(
    signal: AbortSignal,
    deposed: AbortSignal,
    rearm: () => void,
    lost: string,
  ): Promise<string> {
    const wake = AbortSignal.any([signal, deposed]);
    while (!signal.aborted) {
      await sleep(this.#o.retryPeriodMs, wake);
      if (signal.aborted) break;
      if (deposed.aborted) return lost;
      const renewed = await this.#tryAcquireOrRenew();
      if (deposed.aborted) return lost;
      if (renewed) rearm();
      else if (this.#o.clock() - this.#renewedAtMs >= this.#o.renewDeadlineMs) return lost;
    }
    return 'shutting down';
  }

  /** One try (client-go tryAcquireOrRenew); false when another holder's lease is valid or a write lost. */
  async #tryAcquireOrRenew(): Promise<boolean> {
    const startedMs = this.#o.clock();
    try {
      const written = await withTimeout(this.#write(startedMs), this.#o.renewDeadlineMs);
      if (!written) return false;
      this.#renewedAtMs = startedMs;
      return true;
    } catch (error) {
      if (!isConflict(error) && !isAlreadyExists(error)) this.#o.onEvent?.({ type: 'try-failed', error });
      this.#seen = undefined;
      return false;
    }
  }

  async #write(nowMs: number): Promise<boolean> {
    const store = this.#o.store;
    // The leader renews on the resourceVersion of its own last write (no GET): 1 request per
    // retry period. A 409 means someone else wrote it; the next try reads again.
    let seen = this.#leading ? this.#seen : undefined;
    if (!seen) {
      const lease = await store.get();
      if (!lease) {
        const spec: LeaseSpec = {
          ...take(this.#o.identity, nowMs, this.#o.leaseDurationMs),
          leaseTransitions: 0,
        };
        this.#seen = observe(undefined, await store.create(spec), nowMs);
        return true;
      }
      seen = this.#seen = observe(this.#seen, lease, nowMs);
    }
    const decision = decide(this.#o.identity, seen, nowMs, this.#o.leaseDurationMs);
    if ('wait' in decision) {
      this.#o.onEvent?.({ type: 'waiting', holder: decision.wait.holder });
      return false;
    }
    this.#seen = observe(seen, await store.update(seen.resourceVersion, decision.take), nowMs);
    return true;
  }

  async #release(): Promise<void> {
    const seen = this.#seen;
    if (!seen || seen.spec.holderIdentity !== this.#o.identity) return;
    try {
      await withTimeout(
        this.#o.store.update(seen.resourceVersion, releasedSpec(seen.spec, this.#o.clock())),
        this.#o.retryPeriodMs,
      );
      this.#o.onEvent?.({ type: 'released' });
    } catch (error) {
      this.#o.onEvent?.({ type: 'try-failed', error });
    }
  }
}

function take(identity: string, nowMs: number, leaseDurationMs: number): LeaseSpec {
  const d = decide(identity, { spec: {}, resourceVersion: '', observedAtMs: nowMs }, nowMs, leaseDurationMs);
  return 'take' in d ? d.take : {};
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return delay(ms, undefined, { signal }).catch(() => undefined);
}

/** `work`, or a rejection (TimeoutError) after `ms`: core's abortable (the request itself runs on). */
function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  return abortable(work, AbortSignal.timeout(ms));
}
