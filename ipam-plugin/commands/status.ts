/**
 * STATUS (1.1.0; SPEC §2 "STATUS"): success when an ADD on this node could get
 * an address of every configured family; code 50 otherwise (exhausted pools, or the API server
 * unreachable: in both cases an ADD cannot be served). No lock: a read.
 */
import { isBackendUnavailableError } from '../backend/port.ts';
import type { CommandContext, CommandResult } from './context.ts';
import { CniCode, CniError } from '../cni/errors.ts';

export async function status(ctx: CommandContext): Promise<CommandResult> {
  let outcome;
  try {
    const backend = await ctx.backend();
    outcome = await backend.status(ctx.conf.nodeName, ctx.conf.families, ctx.conf.pools);
  } catch (e) {
    if (isBackendUnavailableError(e))
      throw new CniError(CniCode.notAvailable, 'datastore unreachable', e.message);
    throw e;
  }
  if (outcome.kind !== 'ready')
    throw new CniError(CniCode.notAvailable, 'no address available', outcome.message);
  return undefined;
}
