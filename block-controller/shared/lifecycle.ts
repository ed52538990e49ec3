/**
 * Graceful shutdown of a daemon: on SIGTERM or SIGINT
 * 1. `signal` aborts — loops check it and start no new work;
 * 2. in-flight writes registered with {@link Lifecycle.track} are awaited (bounded by
 *    `drainTimeoutMs`), so no compare-and-swap is cut between its decision and its write;
 * 3. stop hooks run, last registered first (watches, HTTP server, connections);
 * 4. the process exits 0 (1 when a step failed or the drain timed out).
 * A second signal during shutdown exits at once with 1.
 */
import { errorFields, F } from './log.ts';
import type { Logger } from './log.ts';

// 20 s: below Kubernetes' default terminationGracePeriodSeconds (30 s), so the daemon exits on
// its own before the kubelet's SIGKILL; a CAS write normally takes milliseconds.
const DEFAULT_DRAIN_TIMEOUT_MS = 20_000;

export type StopHook = () => void | Promise<void>;

export class Lifecycle {
  readonly #controller = new AbortController();
  readonly #hooks: { name: string; hook: StopHook }[] = [];
  readonly #inFlight = new Set<Promise<unknown>>();
  readonly #log: Logger;
  readonly #drainTimeoutMs: number;
  #shutdown: Promise<boolean> | undefined;

  constructor(log: Logger, options: { drainTimeoutMs?: number } = {}) {
    this.#log = log;
    this.#drainTimeoutMs = options.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
  }

  /** Aborted when shutdown begins. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get stopping(): boolean {
    return this.#controller.signal.aborted;
  }

  /** Registers a stop hook; hooks run in reverse order of registration. */
  onStop(name: string, hook: StopHook): void {
    this.#hooks.push({ name, hook });
  }

  /** Registers an in-flight write; shutdown waits for it. Returns the same promise. */
  track<T>(work: Promise<T>): Promise<T> {
    this.#inFlight.add(work);
    const forget = (): void => void this.#inFlight.delete(work);
    work.then(forget, forget);
    return work;
  }

  /** Runs the shutdown once. @returns true when every step succeeded within the drain timeout */
  shutdown(reason: string): Promise<boolean> {
    return (this.#shutdown ??= this.#run(reason));
  }

  /**
   * Installs SIGTERM/SIGINT handlers that shut down and exit.
   * @param exit default process.exit
   */
  handleSignals(exit: (code: number) => void = (code) => process.exit(code)): void {
    for (const signal of ['SIGTERM', 'SIGINT'] as const)
      process.on(signal, () => {
        if (this.#shutdown) {
          this.#log.warn('second signal during shutdown; exiting now', { [F.signal]: signal });
          exit(1);
          return;
        }
        void this.shutdown(signal).then((clean) => exit(clean ? 0 : 1));
      });
  }

  async #run(reason: string): Promise<boolean> {
    const started = Date.now();
    this.#log.info('shutting down', { [F.reason]: reason, [F.count]: this.#inFlight.size });
    this.#controller.abort(new Error(`shutting down: ${reason}`));
    let clean = await this.#drain();
    for (const { name, hook } of [...this.#hooks].reverse()) {
      try {
        await hook();
      } catch (error) {
        clean = false;
        this.#log.error('stop hook failed', { [F.resource]: name, ...errorFields(error) });
      }
    }
    this.#log.info('stopped', { [F.durationMs]: Date.now() - started, clean });
    return clean;
  }

  async #drain(): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), this.#drainTimeoutMs);
    });
    const drained = (async () => {
      while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
      return true as const;
    })();
    const result = await Promise.race([drained, timedOut]);
    clearTimeout(timer);
    if (!result)
      this.#log.error('in-flight writes did not finish in time', { [F.count]: this.#inFlight.size });
    return result;
  }
}
