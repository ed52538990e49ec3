/**
 * Pod egress masquerade for the node agent (docs/design-agent.md §Masquerade): the planner
 * (pure), the nftables rendering (pure) and `nft` adapter, one pass, and the loop the agent drives.
 */
export { planMasquerade, outermost } from './plan.ts';
export type { MasqueradePlan, MasqueradeSets } from './plan.ts';
export { NFT_TABLE, NftTable, removalScript, renderRuleset } from './nftables.ts';
export type { MasqueradeTable, NftTableOptions } from './nftables.ts';
export { reconcileMasquerade } from './reconcile.ts';
export type {
  MasqueradeOutcome,
  MasqueradePassOptions,
  MasqueradeView,
  MasqueradeWritten,
} from './reconcile.ts';
export { MasqueradeProgrammer, removeMasquerade } from './programmer.ts';
export type { MasqueradeLog, MasqueradeProgrammerOptions } from './programmer.ts';
export { NftCommandError, isNftCommandError } from './nft-command-error.ts';
