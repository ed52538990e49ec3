/**
 * GC (1.1.0; SPEC §2 "GC"; docs/design-plugin.md §GC semantics): release this node's allocations of this network
 * whose attachment is not in `cni.dev/valid-attachments` (or the legacy `cni.dev/attachments`).
 * `null` and an absent key both mean "no live attachment" — libcni's GCNetworkList(nil) and
 * cnitool `gc` send no key after DELing every cached attachment (docs/design-plugin.md, GC).
 * Continues past per-handle errors and reports them at the end (code 11, details list them).
 */
import type { CommandContext, CommandResult } from './context.ts';
import { CniCode, CniError } from '../errors.ts';

export async function gc(ctx: CommandContext): Promise<CommandResult> {
  const ipam = await ctx.ipam();
  const outcome = await ipam.gc({
    network: ctx.conf.name,
    node: ctx.conf.nodeName,
    validAttachments: ctx.conf.validAttachments ?? [],
  });
  if (outcome.aliveElsewhere.length > 0)
    ctx.log.log('warn', 'gc kept allocations whose pod is alive on another node', {
      kept: outcome.aliveElsewhere,
    });
  ctx.log.log('info', 'gc done', {
    released: outcome.released,
    keyPresent: ctx.conf.validAttachments !== undefined,
  });
  if (outcome.errors.length > 0) {
    throw new CniError(
      CniCode.tryAgainLater,
      `GC could not release ${outcome.errors.length} allocation(s)`,
      outcome.errors.join('; '),
    );
  }
  return undefined;
}
