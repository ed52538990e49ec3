/** `ipamctl repair sequence`: writes that undo what `check` reports and core will not fix itself. */
import type { CommandContext } from '../command.ts';
import { defineGroup } from './group.ts';
import { repairSequenceCommand } from './repair/sequence.ts';

export function repairCommand(ctx: CommandContext) {
  return defineGroup(ctx, 'repair', 'Repair what check reports and core does not fix itself', [
    repairSequenceCommand,
  ]);
}
