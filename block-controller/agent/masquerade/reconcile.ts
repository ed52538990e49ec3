/**
 * One masquerade pass: plan from the pools, compare the kernel's table with what the last write
 * left there, replace the table when the plan changed or the table drifted. Refuses to touch the
 * kernel until the pools have been listed: a restarted agent's empty cache is not a cluster
 * without pools (the previous agent's rule keeps pods' egress working meanwhile).
 */
import type { Cidr, IPPool } from 'blockipam/core';
import { renderRuleset, type MasqueradeTable } from './nftables.ts';
import { planMasquerade, type MasqueradePlan } from './plan.ts';

/** What the pass reads from the agent's informers. */
export interface MasqueradeView {
  /** True once every informer feeding the agent finished its initial LIST. */
  readonly synced: boolean;
  /** Every IPPool. */
  readonly pools: readonly IPPool[];
}

/** What the last write of this process left: the script and the table as `nft` listed it after. */
export interface MasqueradeWritten {
  readonly script: string;
  readonly listing: string | undefined;
}

export type MasqueradeOutcome =
  | { readonly status: 'waiting'; readonly why: 'not-synced' }
  | {
      readonly status: 'unchanged' | 'written';
      /**
       * Why the table was written: `start` (this process had not written it yet), `plan` (the
       * pools or CIDRs changed), `drift` (the table differs from what the last write left:
       * deleted or edited by hand). Absent when unchanged.
       */
      readonly why?: 'start' | 'plan' | 'drift';
      /** Source CIDRs (the pools, outermost), IPv4 + IPv6. */
      readonly sources: number;
      /** Exempt destination CIDRs (pools and non-masquerade CIDRs, outermost), IPv4 + IPv6. */
      readonly exempt: number;
      readonly skipped: MasqueradePlan['skipped'];
    };

export interface MasqueradePassOptions {
  readonly table: MasqueradeTable;
  /** The operator's non-masquerade CIDRs (validated at the edge). */
  readonly nonMasquerade: readonly Cidr[];
}

/**
 * Runs one pass.
 * @param last what this process's last write left (undefined before its first)
 * @returns the outcome, and what the table now holds when the pass wrote it (else `last`)
 * @throws {NftCommandError} when `nft` cannot list or load (a failed load changed nothing)
 */
export async function reconcileMasquerade(
  view: MasqueradeView,
  options: MasqueradePassOptions,
  last: MasqueradeWritten | undefined,
): Promise<{ outcome: MasqueradeOutcome; written: MasqueradeWritten | undefined }> {
  if (!view.synced) return { outcome: { status: 'waiting', why: 'not-synced' }, written: last };
  const plan = planMasquerade(view.pools, options.nonMasquerade);
  const counts = {
    sources: plan[4].sources.length + plan[6].sources.length,
    exempt: plan[4].exempt.length + plan[6].exempt.length,
    skipped: plan.skipped,
  };
  const script = renderRuleset(plan);
  const listing = await options.table.list();
  const why = !last
    ? 'start'
    : last.script !== script
      ? 'plan'
      : last.listing !== listing
        ? 'drift'
        : undefined;
  if (!why) return { outcome: { status: 'unchanged', ...counts }, written: last };
  await options.table.load(script);
  const written = { script, listing: await options.table.list() };
  return { outcome: { status: 'written', why, ...counts }, written };
}
