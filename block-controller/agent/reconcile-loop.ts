/**
 * The agent's reconcile loop, shared by routes (routes/programmer.ts) and masquerade
 * (masquerade/programmer.ts): the latest view from the informers, and passes over it that are
 * serialised (never two at once) and coalesced — a burst of updates costs one pass after
 * `debounceMs` — plus a repair pass every `resyncMs` with the latest view, so that kernel state
 * someone changed by hand is put back. A programmer extends it with its `pass`, which reports
 * its own outcome; a pass that rejects is ignored (the next one runs as ever). A pass is told
 * whether it is `forced` (the repair timer, `flush`, `resume`): one that only follows updates may
 * skip reading the kernel when what it would write has not changed since its last full pass.
 */

/** The two log levels the loops use; a winston Logger fits. */
export interface LoopLog {
  info(message: string, meta?: Record<string, unknown>): unknown;
  warn(message: string, meta?: Record<string, unknown>): unknown;
}

export interface ReconcileLoopOptions {
  /** Coalescing delay after an update, ms. Default 100 (a burst of informer events = one pass). */
  readonly debounceMs?: number;
  /** Period of the repair pass, ms. Default 10 000 (flannel's host-gw checks its routes every 10 s, too). */
  readonly resyncMs?: number;
}

export abstract class ReconcileLoop<V> {
  readonly #debounceMs: number;
  readonly #resyncMs: number;
  #view: V;
  #debounce: NodeJS.Timeout | undefined;
  #resync: NodeJS.Timeout;
  #running: Promise<void> | undefined;
  /** A pass is due after the running one: undefined (none), false (after updates), true (forced). */
  #again: boolean | undefined;
  #stopped = false;

  /** @param initial the view before the first update (one on which a pass changes nothing) */
  constructor(initial: V, options: ReconcileLoopOptions) {
    this.#view = initial;
    this.#debounceMs = options.debounceMs ?? 100;
    this.#resyncMs = options.resyncMs ?? 10_000;
    this.#resync = this.#repairTimer();
  }

  /**
   * One pass over the latest view.
   * @param forced true for the repair timer's passes and those of `flush` and `resume`; false
   *   for a pass that follows updates only
   */
  protected abstract pass(view: V, forced: boolean): Promise<void>;

  /** True after {@link stop}, until {@link resume}. */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** The latest view; schedules a pass. The view is not copied: pass a fresh one. */
  update(view: V): void {
    if (this.#stopped) return;
    this.#view = view;
    clearTimeout(this.#debounce);
    this.#debounce = setTimeout(() => this.#kick(false), this.#debounceMs);
    this.#debounce.unref();
  }

  /** Runs a pass now (after the running one, if any) and resolves when it is done. */
  async flush(): Promise<void> {
    clearTimeout(this.#debounce);
    await this.#idle();
    this.#kick(true);
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
    this.#kick(true);
  }

  #repairTimer(): NodeJS.Timeout {
    const timer = setInterval(() => this.#kick(true), this.#resyncMs);
    timer.unref();
    return timer;
  }

  async #idle(): Promise<void> {
    for (let p = this.#running; p; p = this.#running) await p;
  }

  #kick(forced: boolean): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = forced || this.#again === true;
      return;
    }
    this.#running = this.pass(this.#view, forced)
      .catch(() => undefined)
      .finally(() => {
        this.#running = undefined;
        const again = this.#again;
        this.#again = undefined;
        if (again !== undefined) this.#kick(again);
      });
  }
}

/** A failed pass's error as the loops log it: its message and its class's stable name. */
export function passFailure(error: unknown): { error: string; errorName: string } {
  return error instanceof Error
    ? { error: error.message, errorName: error.name }
    : { error: String(error), errorName: 'unknown' };
}
