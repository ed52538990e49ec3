/**
 * Pod egress masquerade for the node agent (docs/design-agent.md §Masquerade): the planner
 * (pure), the nftables rendering (pure) and `nft` adapter, one pass, and the loop the agent drives.
 */
export { planMasquerade, outermost } from './plan.ts';
export { NftTable, removalScript, renderRuleset } from './nftables.ts';
export type { MasqueradeTable } from './nftables.ts';
export { reconcileMasquerade } from './reconcile.ts';
export type { MasqueradeOutcome, MasqueradeView, MasqueradeWritten } from './reconcile.ts';
export { MasqueradeProgrammer, removeMasquerade } from './programmer.ts';
export { NftCommandError, isNftCommandError } from './nft-command-error.ts';
