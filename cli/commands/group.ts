/**
 * A command group (`ipamctl pool …`, `ipamctl config …`): its subcommands, one file each, and a
 * demand for one of them.
 */
import type { Argv, CommandModule } from 'yargs';
import type { CommandContext, CommandFactory, GlobalFlags } from '../command.ts';

/** Builds a group whose subcommands come from `factories`. */
export function defineGroup(
  ctx: CommandContext,
  name: string,
  describe: string,
  factories: readonly CommandFactory[],
): CommandModule<GlobalFlags, never> {
  return {
    command: `${name} <command>`,
    describe,
    builder: ((y: Argv<GlobalFlags>) =>
      factories
        .reduce((acc, f) => acc.command(f(ctx)), y)
        .demandCommand(
          1,
          `Name a ${name} command (see ipamctl ${name} --help).`,
        )) as unknown as CommandModule<GlobalFlags, never>['builder'],
    handler: () => undefined,
  };
}
