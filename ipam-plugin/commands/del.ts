/**
 * DEL (SPEC §2): release every address of the attachment.
 * Idempotent: an unknown container, a repeated DEL, a missing or deleted netns (never opened)
 * and a block that is gone are all success with no output. prevResult, when present in any
 * version, is only a hint. CNI_ARGS is not needed and not parsed, so a DEL can never fail on it.
 * An unreachable API server fails with code 11 and changes nothing (the runtime retries).
 */
import { prevResultAddresses } from '../cni/prev-result.ts';
import { attachmentOf, underLock, type CommandContext, type CommandResult } from './context.ts';

export async function del(ctx: CommandContext): Promise<CommandResult> {
  const backend = await ctx.backend();
  const hintIPs = prevResultAddresses(ctx.conf.prevResult);
  const released = await underLock(ctx, (signal) =>
    backend.del({ attachment: attachmentOf(ctx), node: ctx.conf.nodeName, hintIPs, signal }),
  );
  ctx.log.log('info', released > 0 ? 'released' : 'nothing to release', { released });
  return undefined;
}
