/**
 * The agent's reconcile loop, shared by routes (routes/programmer.ts) and masquerade
 * (masquerade/programmer.ts): the latest view from the informers, and passes over it that are
 * serialised (never two at once) and coalesced — a burst of updates costs one pass after
 * `debounceMs` — plus a repair pass every `resyncMs` with the latest view, so that kernel state
 * someone changed by hand is put back. The pass reports its own outcome; a pass that rejects is
 * ignored (the next one runs as ever).
 */

export interface ReconcileLoopOptions<V> {
  /** The view before the first update (one on which a pass changes nothing). */
  readonly initial: V;
  /** One pass over the latest view. */
  readonly pass: (view: V) => Promise<void>;
  /** Coalescing delay after an update, ms. */
  readonly debounceMs: number;
  /** Period of the repair pass, ms. */
  readonly resyncMs: number;
}

export class ReconcileLoop<V> {
  readonly #options: ReconcileLoopOptions<V>;
  #view: V;
  #debounce: NodeJS.Timeout | undefined;
  #resync: NodeJS.Timeout;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;

  constructor(options: ReconcileLoopOptions<V>) {
    this.#options = options;
    this.#view = options.initial;
    this.#resync = this.#repairTimer();
  }

  /** True after {@link stop}, until {@link resume}. */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** The latest view; schedules a pass. The view is not copied: pass a fresh one. */
  update(view: V): void {
    if (this.#stopped) return;
    this.#view = view;
    clearTimeout(this.#debounce);
    this.#debounce = setTimeout(() => this.#kick(), this.#options.debounceMs);
    this.#debounce.unref();
  }

  /** Runs a pass now (after the running one, if any) and resolves when it is done. */
  async flush(): Promise<void> {
    clearTimeout(this.#debounce);
    await this.#idle();
    this.#kick();
    await this.#idle();
  }

  /** Stops the timers and waits for the running pass; no pass runs until {@link resume}. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#debounce);
    clearInterval(this.#resync);
    await this.#idle();
  }

  /** After {@link stop}: the timers run again, and a pass on the latest view runs now. */
  resume(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#resync = this.#repairTimer();
    this.#kick();
  }

  #repairTimer(): NodeJS.Timeout {
    const timer = setInterval(() => this.#kick(), this.#options.resyncMs);
    timer.unref();
    return timer;
  }

  async #idle(): Promise<void> {
    for (let p = this.#running; p; p = this.#running) await p;
  }

  #kick(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#options
      .pass(this.#view)
      .catch(() => undefined)
      .finally(() => {
        this.#running = undefined;
        if (this.#again) {
          this.#again = false;
          this.#kick();
        }
      });
  }
}

/** A failed pass's error as the loops log it: its message and its class's stable name. */
export function passFailure(error: unknown): { error: string; errorName: string } {
  return error instanceof Error
    ? { error: error.message, errorName: error.name }
    : { error: String(error), errorName: 'unknown' };
}
