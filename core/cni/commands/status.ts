/**
 * STATUS (1.1.0; SPEC §2 "STATUS"): success when an ADD on this node could get
 * an address of every configured family; code 50 otherwise (exhausted pools, or the API server
 * unreachable — the client maps that to 50 for STATUS: in both cases an ADD cannot be served).
 * No lock: a read.
 */
import type { CommandContext, CommandResult } from './context.ts';
import { CniCode, CniError } from '../errors.ts';

export async function status(ctx: CommandContext): Promise<CommandResult> {
  const ipam = await ctx.ipam();
  const outcome = await ipam.status({
    node: ctx.conf.nodeName,
    families: ctx.conf.families,
    pools: ctx.conf.pools,
  });
  if (outcome.kind !== 'ready')
    throw new CniError(CniCode.notAvailable, 'no address available', outcome.message);
  return undefined;
}
