/**
 * `ipamctl pool disable NAME` / `pool enable NAME`: stops (or resumes) new allocations from a
 * pool; existing ones stay. One compare-and-swap UPDATE of the IPPool.
 */
import { defineCommand, withYes } from '../../command.ts';
import type { CommandContext, GlobalFlags } from '../../command.ts';
import { CliError, EXIT, println } from '../../io.ts';
import { requirePoolName } from './create.ts';

interface ToggleArgs extends GlobalFlags {
  name: string;
}

function toggle(ctx: CommandContext, disabled: boolean) {
  const verb = disabled ? 'disable' : 'enable';
  return defineCommand<ToggleArgs>({
    ctx,
    command: `${verb} <name>`,
    describe: disabled
      ? 'Stop new allocations from a pool (existing ones stay)'
      : 'Allow allocations from a disabled pool again',
    builder: (y) =>
      withYes(y, false)
        .positional('name', { type: 'string', demandOption: true, describe: 'IPPool name' })
        .example(
          `$0 pool ${verb} default-v4`,
          disabled ? 'Drain a pool before deleting it' : 'Undo pool disable',
        ),
    prepare: (args) => requirePoolName(args.name),
    run: async (args, { ds }) => {
      const pool = await ds.pools.get(args.name);
      if (!pool) throw new CliError(`IPPool ${args.name} does not exist`);
      const already = (pool.spec.disabled === true) === disabled;
      if (!already) await ds.pools.update({ ...pool, spec: { ...pool.spec, disabled } });
      println(ctx.io.stdout, `IPPool ${args.name} ${already ? 'is already ' : ''}${verb}d.`);
      return EXIT.OK;
    },
  });
}

export const poolDisableCommand = (ctx: CommandContext) => toggle(ctx, true);
export const poolEnableCommand = (ctx: CommandContext) => toggle(ctx, false);
