/**
 * The agent's masquerade loop: the seam between its pool informer and the kernel.
 *
 *   const masq = new MasqueradeProgrammer({ table: new NftTable(), nonMasquerade, log });
 *   masq.update({ synced, pools });   // after every pool event (debounced)
 *   await masq.stop();                // on SIGTERM: the table stays (pods keep their egress)
 *   await masq.uninstall();           // the uninstall signal: the loop stops, the table goes
 *   masq.resume();                    // the agent's DaemonSet back: the loop writes it again
 *
 * Passes are serialised and coalesced like the route loop's: a burst of pool events is one pass
 * after `debounceMs`; a repair pass every `resyncMs` re-creates a table deleted or edited by
 * hand. A failed pass is reported through `onPass` as `{status: 'error'}` and logged; the loop
 * keeps running. {@link removeMasquerade} is the agent's other mode (masquerade turned off).
 */
import { isNftCommandError } from './nft-command-error.ts';
import { removalScript, type MasqueradeTable } from './nftables.ts';
import {
  reconcileMasquerade,
  type MasqueradeOutcome,
  type MasqueradePassOptions,
  type MasqueradeView,
  type MasqueradeWritten,
} from './reconcile.ts';

/** The two log levels the loop uses; a winston Logger fits. */
export interface MasqueradeLog {
  info(message: string, meta?: Record<string, unknown>): unknown;
  warn(message: string, meta?: Record<string, unknown>): unknown;
}

export interface MasqueradeProgrammerOptions extends MasqueradePassOptions {
  /** Coalescing delay after an update, ms. Default 100. */
  readonly debounceMs?: number;
  /** Period of the repair pass, ms. Default 10 000 (as the route loop's). */
  readonly resyncMs?: number;
  readonly log?: MasqueradeLog;
  /** Called after every pass with its outcome and duration (metrics, tests). A thrown error is ignored. */
  readonly onPass?: (outcome: MasqueradeOutcome | { status: 'error'; error: string }, ms: number) => void;
}

const WAITING: MasqueradeView = { synced: false, pools: [] };

export class MasqueradeProgrammer {
  readonly #options: MasqueradeProgrammerOptions;
  #view: MasqueradeView = WAITING;
  #written: MasqueradeWritten | undefined;
  #debounce: NodeJS.Timeout | undefined;
  #resync: NodeJS.Timeout;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;

  constructor(options: MasqueradeProgrammerOptions) {
    this.#options = options;
    this.#resync = this.#repairTimer();
  }

  #repairTimer(): NodeJS.Timeout {
    const timer = setInterval(() => this.#kick(), this.#options.resyncMs ?? 10_000);
    timer.unref();
    return timer;
  }

  /** The latest view from the informers; schedules a pass. The view is not copied: pass a fresh one. */
  update(view: MasqueradeView): void {
    if (this.#stopped) return;
    this.#view = view;
    clearTimeout(this.#debounce);
    this.#debounce = setTimeout(() => this.#kick(), this.#options.debounceMs ?? 100);
    this.#debounce.unref();
  }

  /** Runs a pass now (after the running one, if any) and resolves when it is done. */
  async flush(): Promise<void> {
    clearTimeout(this.#debounce);
    await this.#idle();
    this.#kick();
    await this.#idle();
  }

  /** Stops the timers and waits for the running pass; the table stays (docs/design-agent.md §Masquerade). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#debounce);
    clearInterval(this.#resync);
    await this.#idle();
  }

  /**
   * The uninstall signal (the agent's DaemonSet deleted, docs/design-agent.md §Uninstall): stops
   * the loop as {@link stop} does, then removes the table — never on a plain stop, so a restart
   * keeps pods' egress. Nothing writes the table again until {@link resume}. Idempotent.
   * @throws {NftCommandError} when `nft` cannot run or refuses (the loop stays stopped)
   */
  async uninstall(): Promise<void> {
    await this.stop();
    await removeMasquerade(this.#options.table);
  }

  /**
   * The agent's DaemonSet back after {@link uninstall}: the loop runs again, and a pass on the
   * latest view (writing the table from scratch) runs now.
   */
  resume(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#written = undefined;
    this.#resync = this.#repairTimer();
    this.#kick();
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
    this.#running = this.#pass().finally(() => {
      this.#running = undefined;
      if (this.#again) {
        this.#again = false;
        this.#kick();
      }
    });
  }

  async #pass(): Promise<void> {
    const { log, onPass } = this.#options;
    const t0 = performance.now();
    let outcome: MasqueradeOutcome | { status: 'error'; error: string };
    try {
      const pass = await reconcileMasquerade(this.#view, this.#options, this.#written);
      this.#written = pass.written;
      outcome = pass.outcome;
      if (outcome.status === 'written')
        log?.info('masquerade rule written', {
          why: outcome.why,
          sources: outcome.sources,
          exempt: outcome.exempt,
        });
      if (outcome.status === 'written' && outcome.skipped.length > 0)
        log?.warn('pools left out of the masquerade rule: no CIDR', { pools: outcome.skipped });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      outcome = { status: 'error', error: message };
      // what the table holds is unknown now: the next pass writes it again
      this.#written = undefined;
      log?.warn('masquerade pass failed; the next pass retries', {
        error: message,
        errorName: isNftCommandError(error) ? error.name : error instanceof Error ? error.name : 'unknown',
      });
    }
    try {
      onPass?.(outcome, performance.now() - t0);
    } catch {
      // a listener's failure is not the loop's
    }
  }
}

/**
 * Removes the agent's table (masquerade turned off); succeeds when it is absent.
 * @throws {NftCommandError} when `nft` cannot run or refuses
 */
export async function removeMasquerade(table: MasqueradeTable & { readonly table?: string }): Promise<void> {
  await table.load(removalScript(table.table));
}
