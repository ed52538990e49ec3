/**
 * A command group (`ipamctl pool …`, `ipamctl config …`): its subcommands, one file each, and a
 * demand for one of them.
 */
import type { Argv, CommandModule } from 'yargs';
import type { CommandContext, CommandFactory, GlobalFlags } from '../command.ts';

/** A group's module, with the names of its subcommands (the usage-error hint reads them). */
export type GroupModule = CommandModule<GlobalFlags, never> & { readonly subcommands: readonly string[] };

/** The name a command module is typed as: the first word of its `command` ("create <name>" → "create"). */
export function commandName(module: CommandModule<GlobalFlags, never>): string {
  const command: unknown = Array.isArray(module.command) ? (module.command as unknown[])[0] : module.command;
  return typeof command === 'string' ? (command.split(' ')[0] ?? '') : '';
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
    subcommands: factories.map((f) => commandName(f(ctx))),
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
