/**
 * One reconcile pass: plan from the view, read the routes (ours, and others' equal ones to take
 * over), apply the difference.
 * Refuses to read or touch the kernel until the planner is ready (informers synced, own Node
 * and own IPAMNode in view): an agent that restarts with an empty cache changes no route until it has listed
 * the cluster again.
 */
import { diffRoutes } from './diff.ts';
import { planRoutes, type Plan, type PlanOptions } from './plan.ts';
import type { RouteChange, RouteTable, RouteView, SkippedRoute } from './types.ts';

export interface ReconcileOptions extends PlanOptions {
  readonly table: RouteTable;
}

export type PassOutcome =
  | { readonly status: 'waiting'; readonly why: Extract<Plan, { ready: false }>['why'] }
  | {
      readonly status: 'done';
      /** Routes the plan holds. */
      readonly desired: number;
      /** Desired routes already installed as wanted. */
      readonly unchanged: number;
      readonly added: number;
      readonly replaced: number;
      readonly removed: number;
      /** Changes the kernel refused (e.g. "File exists": another protocol's route holds the dst). */
      readonly failed: readonly { readonly change: RouteChange; readonly error: string }[];
      readonly skipped: readonly SkippedRoute[];
    };

/**
 * Runs one pass.
 * @throws {RouteCommandError} when the table cannot be read (nothing was changed) or the
 *   command cannot be run at all
 */
export async function reconcileRoutes(view: RouteView, options: ReconcileOptions): Promise<PassOutcome> {
  const plan = planRoutes(view, options);
  if (!plan.ready) return { status: 'waiting', why: plan.why };
  const [installed, others] = await Promise.all([options.table.list(), options.table.others()]);
  const changes = diffRoutes(plan.routes, installed, others);
  const failed = await options.table.apply(changes);
  const failedSet = new Set(failed.map((f) => f.change));
  const count = (op: RouteChange['op']): number =>
    changes.filter((c) => c.op === op && !failedSet.has(c)).length;
  return {
    status: 'done',
    desired: plan.routes.length,
    unchanged: plan.routes.length - changes.filter((c) => c.op !== 'delete').length,
    added: count('add'),
    replaced: count('replace'),
    removed: count('delete'),
    failed,
    skipped: plan.skipped,
  };
}
