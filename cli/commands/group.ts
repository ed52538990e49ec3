/**
 * A command group (`ipamctl pool …`, `ipamctl config …`): its subcommands, one file each, and a
 * demand for one of them.
 */
import type { Argv, CommandModule } from 'yargs';
import type { CommandContext, CommandFactory, GlobalFlags } from '../command.ts';

/** A group's module, with its subcommands' `command` strings (usage errors read them). */
export type GroupModule = CommandModule<GlobalFlags, never> & { readonly subcommands: readonly string[] };

/** A command module's `command` string ("create <name>"). */
export function commandOf(module: CommandModule<GlobalFlags, never>): string {
  return typeof module.command === 'string' ? module.command : '';
}

/** Builds a group whose subcommands come from `factories`. */
export function defineGroup(
  ctx: CommandContext,
  name: string,
  describe: string,
  factories: readonly CommandFactory[],
): GroupModule {
  return {
    command: `${name} <command>`,
    subcommands: factories.map((f) => commandOf(f(ctx))),
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
