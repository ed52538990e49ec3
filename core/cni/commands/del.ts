/**
 * DEL (SPEC §2): release every address of the attachment.
 * Idempotent: an unknown container, a repeated DEL, a missing or deleted netns (never opened)
 * and a block that is gone are all success with no output. prevResult is not needed (the handle
 * finds the allocation). Of CNI_ARGS only a well-formed K8S_POD_UID is read (an allocation
 * recorded for another pod UID is left alone); a malformed CNI_ARGS never fails a DEL.
 * An unreachable API server fails with code 11 and changes nothing (the runtime retries). On
 * the direct path an unusable lock file (ipam.lockFile), or a lock not obtained within
 * ipam.lockTimeoutMs, does not fail it: it releases without the lock (direct-client.ts).
 * With ipam.hostLocalStore, the container's files there go too (host-local-store.ts).
 */
import { podUIDOf } from '../args.ts';
import { releaseFromStore } from '../host-local-store.ts';
import { attachmentOf, type CommandContext, type CommandResult } from './context.ts';

export async function del(ctx: CommandContext): Promise<CommandResult> {
  const ipam = await ctx.ipam();
  const podUID = podUIDOf(ctx.env.args);
  const { released } = await ipam.del({
    attachment: attachmentOf(ctx),
    node: ctx.conf.nodeName,
    ...(podUID !== undefined ? { podUID } : {}),
  });
  ctx.log.log('info', released > 0 ? 'released' : 'nothing to release', { released });
  const store = ctx.conf.hostLocalStore;
  if (store !== undefined) {
    // host-local's release by container ID (host-local-store.ts); a failure leaves the file,
    // which keeps the address from host-local only: logged, the DEL succeeds
    const { containerID, ifname } = ctx.env;
    await releaseFromStore(store, containerID, ifname).then(
      (ips) => ips.length > 0 && ctx.log.log('info', 'released in host-local store', { ips }),
      (error: unknown) =>
        ctx.log.log('warn', 'host-local store not released', { store, error: (error as Error).message }),
    );
  }
  return undefined;
}
