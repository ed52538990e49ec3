/**
 * `ipamctl pool delete NAME --yes`: refuses while any block of the pool (by pool label) holds an
 * allocation.
 * Otherwise: disable the pool (so allocators stop using it), re-list its blocks, delete each
 * (empty) block with resourceVersion + uid preconditions, then delete the pool with its own —
 * any allocation that slips in between makes a precondition fail and stops the deletion
 * (docs/design-cli.md §pool delete).
 */
import { POOL_LABEL } from 'blockipam/core';
import type { IPAMBlock, IPPool } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { defineCommand } from '../../command.ts';
import type { CommandContext, GlobalFlags } from '../../command.ts';
import { CliError, EXIT, println } from '../../io.ts';
import type { ExitCode, Io } from '../../io.ts';
import { withConnection } from '../with-connection.ts';

interface DeleteArgs extends GlobalFlags {
  name: string;
  yes: boolean;
}

/**
 * The pool's blocks: those labelled `ipam.blockipam.io/pool=<name>` (core/block/labels.ts). Not
 * "blocks inside its CIDR": a pool made with kubectl can overlap another pool, whose blocks
 * (empty or not) are not this pool's to judge or delete.
 */
async function blocksOf(ds: KubeDatastore, pool: IPPool): Promise<IPAMBlock[]> {
  return ds.blocks.list({ labelSelector: { matchLabels: { [POOL_LABEL]: pool.metadata.name } } });
}

/** @throws CliError naming the blocks that still hold allocations */
function refuseIfAllocated(pool: string, blocks: readonly IPAMBlock[]): void {
  const used = blocks.filter((b) => Object.keys(b.spec.allocations).length > 0);
  if (used.length === 0) return;
  const count = used.reduce((n, b) => n + Object.keys(b.spec.allocations).length, 0);
  throw new CliError(
    `refused: IPPool ${pool} still has ${count} allocation(s) in ${used.map((b) => b.metadata.name).join(', ')}; disable it (ipamctl pool disable ${pool}) and wait for pods to move, or release leaks first. Nothing was deleted.`,
  );
}

async function deletePool(ds: KubeDatastore, args: DeleteArgs, io: Io): Promise<ExitCode> {
  let pool = await ds.pools.get(args.name);
  if (!pool) throw new CliError(`IPPool ${args.name} does not exist`);
  const blocks = await blocksOf(ds, pool);
  refuseIfAllocated(args.name, blocks);
  println(
    io.stdout,
    `${args.yes ? 'Deleting' : 'Would delete'} IPPool ${args.name} (${pool.spec.cidr})${pool.spec.disabled ? '' : ' after disabling it'} and its ${blocks.length} empty block(s)${blocks.length ? `: ${blocks.map((b) => b.metadata.name).join(', ')}` : ''}.`,
  );
  if (!args.yes) {
    println(io.stderr, 'Nothing was changed: re-run with --yes to delete.');
    return EXIT.UNCONFIRMED;
  }
  if (!pool.spec.disabled) pool = await ds.pools.update({ ...pool, spec: { ...pool.spec, disabled: true } });
  const again = await blocksOf(ds, pool);
  refuseIfAllocated(args.name, again);
  for (const block of again)
    await ds.blocks.delete(block.metadata.name, {
      resourceVersion: block.metadata.resourceVersion,
      uid: block.metadata.uid,
    });
  await ds.pools.delete(args.name, {
    resourceVersion: pool.metadata.resourceVersion,
    uid: pool.metadata.uid,
  });
  println(io.stdout, `IPPool ${args.name} deleted (${again.length} empty block(s) removed).`);
  return EXIT.OK;
}

export function poolDeleteCommand(ctx: CommandContext) {
  return defineCommand<DeleteArgs>({
    ctx,
    command: 'delete <name>',
    describe: 'Delete a pool that holds no allocations (and its empty blocks)',
    builder: (y) =>
      y
        .positional('name', { type: 'string', demandOption: true, describe: 'IPPool name' })
        .option('yes', {
          alias: 'y',
          type: 'boolean',
          default: false,
          describe: 'Do it (without: print the plan, change nothing, exit 3)',
        })
        .example('$0 pool delete old-v4', 'Show what would be deleted')
        .example('$0 pool delete old-v4 --yes', 'Delete it (refused while addresses are allocated from it)'),
    run: (args) => withConnection(args, ctx.io, (conn) => deletePool(conn.ds, args, ctx.io)),
  });
}
