/**
 * `ipamctl pool disable NAME` / `pool enable NAME`: stops (or resumes) new allocations from a
 * pool; existing ones stay. One compare-and-swap UPDATE of the IPPool.
 */
import { defineCommand } from '../../command.ts';
import type { CommandContext, GlobalFlags } from '../../command.ts';
import { CliError, EXIT, println } from '../../io.ts';
import { withConnection } from '../with-connection.ts';
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
      y
        .positional('name', { type: 'string', demandOption: true, describe: 'IPPool name' })
        .example(
          `$0 pool ${verb} default-v4`,
          disabled ? 'Drain a pool before deleting it' : 'Undo pool disable',
        ),
    run: (args) => {
      requirePoolName(args.name); // before connecting
      return withConnection(args, ctx.io, async (conn) => {
        const pool = await conn.ds.pools.get(args.name);
        if (!pool) throw new CliError(`IPPool ${args.name} does not exist`);
        if ((pool.spec.disabled === true) === disabled) {
          println(ctx.io.stdout, `IPPool ${args.name} is already ${verb}d.`);
          return EXIT.OK;
        }
        await conn.ds.pools.update({ ...pool, spec: { ...pool.spec, disabled } });
        println(ctx.io.stdout, `IPPool ${args.name} ${verb}d.`);
        return EXIT.OK;
      });
    },
  });
}

export const poolDisableCommand = (ctx: CommandContext) => toggle(ctx, true);
export const poolEnableCommand = (ctx: CommandContext) => toggle(ctx, false);
