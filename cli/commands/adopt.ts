/**
 * `ipamctl adopt plan` / `adopt finalize`: taking over a running host-local cluster's pod addresses
 * in place, and whether adoption mode may be switched off.
 */
import type { CommandContext } from '../command.ts';
import { defineGroup } from './group.ts';
import { adoptFinalizeCommand } from './adopt/finalize.ts';
import { adoptPlanCommand } from './adopt/plan.ts';

export function adoptCommand(ctx: CommandContext) {
  return defineGroup(ctx, 'adopt', "Adopt a running host-local cluster's pod addresses in place", [
    adoptPlanCommand,
    adoptFinalizeCommand,
  ]);
}
