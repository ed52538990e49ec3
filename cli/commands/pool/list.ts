/** `ipamctl pool list`: every pool with its state as the allocator sees it (usable, disabled, shadowed). */
import { poolBlockSize, usablePools } from 'blockipam/core';
import type { IPPool } from 'blockipam/core';
import { defineCommand, withFormat } from '../../command.ts';
import type { CommandContext, GlobalFlags } from '../../command.ts';
import { EXIT } from '../../io.ts';
import { print } from '../../output.ts';
import type { Format } from '../../output.ts';

interface ListArgs extends GlobalFlags {
  output: Format;
}

/** The allocator's view of each pool: "usable", "disabled", "deleting" or "shadowed by X". */
function poolStates(pools: readonly IPPool[]): Map<string, string> {
  const { usable, shadowed } = usablePools(pools);
  const states = new Map<string, string>();
  for (const pool of pools) {
    const shadow = shadowed.find((s) => s.pool === pool.metadata.name);
    const state = shadow
      ? `shadowed by ${shadow.by} (overlap)`
      : usable.includes(pool)
        ? 'usable'
        : pool.metadata.deletionTimestamp
          ? 'deleting'
          : 'disabled';
    states.set(pool.metadata.name, state);
  }
  return states;
}

export function poolListCommand(ctx: CommandContext) {
  return defineCommand<ListArgs>({
    ctx,
    command: 'list',
    describe: 'List IP pools',
    builder: (y) =>
      withFormat(y)
        .example('$0 pool list', 'Pools with CIDR, block size, mode and state')
        .example('$0 pool list -o yaml', 'The IPPool objects'),
    run: async (args, { ds }) => {
      const pools = await ds.pools.list();
      const states = poolStates(pools);
      print(ctx.io.stdout, args.output, pools, () => ({
        headers: ['NAME', 'CIDR', 'BLOCK SIZE', 'MODE', 'STATE'],
        rows: pools.map((p) => [
          p.metadata.name,
          p.spec.cidr,
          poolBlockSize(p),
          p.spec.assignmentMode ?? 'Automatic',
          states.get(p.metadata.name) ?? '',
        ]),
      }));
      return EXIT.OK;
    },
  });
}
