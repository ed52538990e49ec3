/**
 * The agent's masquerade loop: the seam between its pool informer and the kernel.
 *
 *   const masq = new MasqueradeProgrammer({ table: new NftTable(), nonMasquerade, log });
 *   masq.update({ synced, pools });   // after every pool event (debounced)
 *   await masq.stop();                // on SIGTERM: the table stays (pods keep their egress)
 *   await masq.uninstall();           // the uninstall signal: the loop stops, the table goes
 *   masq.resume();                    // the agent's DaemonSet back: the loop writes it again
 *
 * Passes run in the agent's reconcile loop (reconcile-loop.ts), as the route loop's: a burst of
 * pool events is one pass after `debounceMs`; a repair pass every `resyncMs` re-creates a table
 * deleted or edited by hand. A failed pass is reported through `onPass` as `{status: 'error'}` and logged; the loop
 * keeps running. {@link removeMasquerade} is the agent's other mode (masquerade turned off).
 */
import { passFailure, ReconcileLoop, type LoopLog, type ReconcileLoopOptions } from '../reconcile-loop.ts';
import { removalScript, type MasqueradeTable } from './nftables.ts';
import {
  reconcileMasquerade,
  type MasqueradeOutcome,
  type MasqueradePassOptions,
  type MasqueradeView,
  type MasqueradeWritten,
} from './reconcile.ts';

export interface MasqueradeProgrammerOptions extends MasqueradePassOptions, ReconcileLoopOptions {
  readonly log?: LoopLog;
  /** Called after every pass with its outcome and duration (metrics, tests). A thrown error is ignored. */
  readonly onPass?: (outcome: MasqueradeOutcome | { status: 'error'; error: string }, ms: number) => void;
}

const WAITING: MasqueradeView = { synced: false, pools: [] };

export class MasqueradeProgrammer extends ReconcileLoop<MasqueradeView> {
  readonly #options: MasqueradeProgrammerOptions;
  #written: MasqueradeWritten | undefined;

  constructor(options: MasqueradeProgrammerOptions) {
    super(WAITING, options);
    this.#options = options;
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
  override resume(): void {
    if (!this.stopped) return;
    this.#written = undefined;
    super.resume();
  }

  protected async pass(view: MasqueradeView): Promise<void> {
    const { log, onPass } = this.#options;
    const t0 = performance.now();
    let outcome: MasqueradeOutcome | { status: 'error'; error: string };
    try {
      const pass = await reconcileMasquerade(view, this.#options, this.#written);
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
      const failure = passFailure(error);
      outcome = { status: 'error', error: failure.error };
      // what the table holds is unknown now: the next pass writes it again
      this.#written = undefined;
      log?.warn('masquerade pass failed; the next pass retries', failure);
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
