/** `ipamctl pool create|list|disable|enable|delete`. */
import type { CommandContext } from '../command.ts';
import { defineGroup } from './group.ts';
import { poolCreateCommand } from './pool/create.ts';
import { poolDeleteCommand } from './pool/delete.ts';
import { poolDisableCommand, poolEnableCommand } from './pool/disable.ts';
import { poolListCommand } from './pool/list.ts';

export function poolCommand(ctx: CommandContext) {
  return defineGroup(ctx, 'pool', 'Create, list, disable, enable and delete IP pools', [
    poolCreateCommand,
    poolListCommand,
    poolDisableCommand,
    poolEnableCommand,
    poolDeleteCommand,
  ]);
}
