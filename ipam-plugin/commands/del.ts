/**
 * DEL (SPEC §2): release every address of the attachment.
 * Idempotent: an unknown container, a repeated DEL, a missing or deleted netns (never opened)
 * and a block that is gone are all success with no output. prevResult is not needed (the handle
 * finds the allocation). Of CNI_ARGS only a well-formed K8S_POD_UID is read (an allocation
 * recorded for another pod UID is left alone); a malformed CNI_ARGS never fails a DEL.
 * An unreachable API server fails with code 11 and changes nothing (the runtime retries). An
 * unusable lock file (ipam.lockFile), or a lock not obtained within ipam.lockTimeoutMs, does not
 * fail it: it releases without the lock (a 409 against the holder is retried on a fresh read).
 */
import { podUIDOf } from '../cni/args.ts';
import { attachmentOf, underLock, type CommandContext, type CommandResult } from './context.ts';

export async function del(ctx: CommandContext): Promise<CommandResult> {
  const backend = await ctx.backend();
  const podUID = podUIDOf(ctx.env.args);
  const target = {
    attachment: attachmentOf(ctx),
    node: ctx.conf.nodeName,
    ...(podUID !== undefined ? { podUID } : {}),
  };
  // Queued behind a holder, the holder may release it (docs/design-plugin.md §Host lock, "Combining").
  const queued = backend.queueDel?.(target);
  let released: number;
  try {
    released = await underLock(
      ctx,
      async (signal, waited, locked) =>
        (await queued?.answer(locked)) ?? backend.del({ ...target, signal, waited, locked }),
      { withoutLock: true, ...(queued ? { beforeWait: () => queued.enqueue() } : {}) },
    );
  } finally {
    queued?.remove();
  }
  ctx.log.log('info', released > 0 ? 'released' : 'nothing to release', { released });
  return undefined;
}
