/**
 * CHECK (≥ 0.4.0; SPEC §2): the attachment must hold an allocation, and
 * every address the prevResult names must be one of it. ptp passes its whole chain result as
 * prevResult (with `interfaces` and `ips[].interface`); only the addresses are read. No lock:
 * a read. Success prints nothing.
 */
import { attachmentOf, type CommandContext, type CommandResult } from './context.ts';
import { CniCode, CniError } from '../errors.ts';
import { invalid } from '../netconf.ts';
import { prevResultAddresses, prevResultProblem } from '../prev-result.ts';

export async function check(ctx: CommandContext): Promise<CommandResult> {
  // A malformed prevResult is a config error (7, naming the field), not a vacuous pass. DEL
  // stays lenient (best effort): it only reads what it can.
  const problem = ctx.conf.prevResult ? prevResultProblem(ctx.conf.prevResult) : undefined;
  if (problem !== undefined) throw invalid(`prevResult${problem}`);
  const ipam = await ctx.ipam();
  const expected = prevResultAddresses(ctx.conf.prevResult);
  const outcome = await ipam.check({
    attachment: attachmentOf(ctx),
    node: ctx.conf.nodeName,
    expectedIPs: expected,
  });
  ctx.log.log('info', 'checked', { outcome: outcome.kind, prevResultIPs: expected });
  if (outcome.kind !== 'ok') {
    throw new CniError(CniCode.checkFailed, `blockipam CHECK failed: ${outcome.kind}`, outcome.message);
  }
  return undefined;
}
