/** `ipamctl adopt plan`: taking over a running host-local cluster's pod addresses in place. */
import type { CommandContext } from '../command.ts';
import { defineGroup } from './group.ts';
import { adoptPlanCommand } from './adopt/plan.ts';

export function adoptCommand(ctx: CommandContext) {
  return defineGroup(ctx, 'adopt', "Adopt a running host-local cluster's pod addresses in place", [
    adoptPlanCommand,
  ]);
}
