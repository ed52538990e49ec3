/** `ipamctl config get|set`. */
import type { CommandContext } from '../command.ts';
import { configGetCommand } from './config/get.ts';
import { configSetCommand } from './config/set.ts';
import { defineGroup } from './group.ts';

export function configCommand(ctx: CommandContext) {
  return defineGroup(ctx, 'config', 'Show and change IPAM settings (IPAMConfig default)', [
    configGetCommand,
    configSetCommand,
  ]);
}
