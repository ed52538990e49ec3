/**
 * The agent's route loop: the seam between the node agent's informers and the kernel.
 *
 *   const routes = new RouteProgrammer({ nodeName, table: new IpRouteTable(), log });
 *   routes.update({ synced, ipamNodes, node, blocks, pools });   // after every informer event (debounced)
 *   await routes.stop();                        // on SIGTERM
 *
 * The agent's reconcile loop (reconcile-loop.ts: update, flush, stop) runs its passes: serialised,
 * coalesced (a burst of updates costs one pass after `debounceMs`), and every `resyncMs` with the
 * latest view, so a route someone deleted by hand comes back. A pass that follows updates only
 * (not the repair timer's, nor `flush`'s) whose plan is the one the last pass applied in full
 * reads and changes nothing (and is not reported): most updates — a block's allocations, the Node's
 * status — change no route, and each full pass runs `ip` three times.
 * Until an update with a synced view that holds this node and its IPAMNode arrives, no pass reads or
 * changes any route. A pass that fails (the `ip` command, or anything else) is reported through
 * `onPass` as `{status: 'error'}` and logged; the loop keeps running. Skipped routes are logged
 * when they change, not on every pass (skip-report.ts).
 */
import { passFailure, ReconcileLoop, type LoopLog, type ReconcileLoopOptions } from '../reconcile-loop.ts';
import { planRoutes } from './plan.ts';
import { reconcileRoutes, type PassOutcome } from './reconcile.ts';
import { SkipReporter, skipLine } from './skip-report.ts';
import type { RouteTable, RouteView } from './types.ts';

export interface RouteProgrammerOptions extends ReconcileLoopOptions {
  readonly nodeName: string;
  readonly table: RouteTable;
  /** Blackhole routes for this node's blocks. Default true. */
  readonly blackholeOwnBlocks?: boolean;
  readonly log?: LoopLog;
  /** Called after every pass (metrics, tests). A thrown error is ignored. */
  readonly onPass?: (outcome: PassOutcome | { status: 'error'; error: string }) => void;
}

const WAITING: RouteView = { synced: false, ipamNodes: [], node: undefined, blocks: [], pools: [] };

export class RouteProgrammer extends ReconcileLoop<RouteView> {
  readonly #options: RouteProgrammerOptions;
  #last: PassOutcome | undefined;
  /** The plan (as JSON) the last pass applied with no failure; undefined after any other outcome. */
  #applied: string | undefined;
  readonly #skips = new SkipReporter();

  constructor(options: RouteProgrammerOptions) {
    super(WAITING, options);
    this.#options = options;
  }

  /** Passes that followed updates and ended at once: their plan was the one applied last. */
  unchangedPasses = 0;

  /** The outcome of the last completed pass (undefined before the first). */
  get last(): PassOutcome | undefined {
    return this.#last;
  }

  /** Logs the skips that changed since the last pass: new or changed groups warn, gone ones info. */
  #reportSkips(skipped: Extract<PassOutcome, { status: 'done' }>['skipped']): void {
    const { log } = this.#options;
    const { appeared, resolved } = this.#skips.changes(skipped);
    for (const g of appeared) {
      const { message, fields } = skipLine(g);
      log?.warn(message, fields);
    }
    for (const g of resolved)
      log?.info('routes no longer skipped', {
        routeNode: g.node,
        reason: g.reason,
        family: g.family === undefined ? 'unknown' : `IPv${g.family}`,
      });
  }

  protected async pass(view: RouteView, forced: boolean): Promise<void> {
    const { log, onPass } = this.#options;
    const planned = JSON.stringify(planRoutes(view, this.#options));
    if (!forced && planned === this.#applied) {
      this.unchangedPasses += 1;
      return;
    }
    this.#applied = undefined;
    let outcome: PassOutcome | { status: 'error'; error: string };
    try {
      outcome = await reconcileRoutes(view, this.#options);
      this.#last = outcome;
      if (outcome.status === 'done' && outcome.failed.length === 0) this.#applied = planned;
      if (
        outcome.status === 'done' &&
        outcome.added + outcome.replaced + outcome.removed + outcome.failed.length > 0
      )
        log?.info('routes reconciled', summary(outcome));
      for (const f of outcome.status === 'done' ? outcome.failed : [])
        log?.warn('route change refused', { op: f.change.op, dst: f.change.route.dst, error: f.error });
      if (outcome.status === 'done') this.#reportSkips(outcome.skipped);
    } catch (error) {
      // The loop outlives any one pass: a failed `ip` (RouteCommandError) or anything else
      // (an object the planner could not read) is reported and the next pass tries again.
      const failure = passFailure(error);
      outcome = { status: 'error', error: failure.error };
      log?.warn('route pass failed; the next pass retries', failure);
    }
    try {
      onPass?.(outcome);
    } catch {
      // a listener's failure is not the loop's
    }
  }
}

function summary(o: Extract<PassOutcome, { status: 'done' }>): Record<string, unknown> {
  return {
    desired: o.desired,
    added: o.added,
    replaced: o.replaced,
    removed: o.removed,
    failed: o.failed.length,
    skipped: o.skipped.length,
  };
}
