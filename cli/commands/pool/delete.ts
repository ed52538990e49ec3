/**
 * `ipamctl pool delete NAME --yes`: refuses while any block of the pool (by pool label) holds an
 * allocation.
 * Otherwise: disable the pool (so allocators stop using it), re-list its blocks, delete each
 * (empty) block with resourceVersion + uid preconditions, then delete the pool with its own —
 * any allocation that slips in between makes a precondition fail and stops the deletion
 * (docs/design-cli.md §pool delete). A write that loses a compare-and-swap (409) starts the
 * write steps over from a fresh GET, bounded.
 */
import { POOL_LABEL } from 'blockipam/core';
import type { Datastore, IPAMBlock, IPPool } from 'blockipam/core';
import { defineCommand, retryOnConflict, unconfirmed, withYes } from '../../command.ts';
import type { CommandContext, GlobalFlags } from '../../command.ts';
import { CliError, EXIT, println } from '../../io.ts';
import type { ExitCode, Io } from '../../io.ts';
import { requirePoolName } from './create.ts';

interface DeleteArgs extends GlobalFlags {
  name: string;
  yes: boolean;
}

/**
 * The pool's blocks: those labelled `ipam.blockipam.io/pool=<name>` (core/block/labels.ts). Not
 * "blocks inside its CIDR": a pool made with kubectl can overlap another pool, whose blocks
 * (empty or not) are not this pool's to judge or delete.
 */
async function blocksOf(ds: Datastore, pool: IPPool): Promise<IPAMBlock[]> {
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

/**
 * The whole command on `ds`: plan, and with `args.yes` the write steps, started over from a fresh
 * GET when one loses a compare-and-swap (at most 5 rounds: retryOnConflict).
 * @throws CliError (refused, gone); ConflictError after 5 lost rounds
 */
export async function deletePool(
  ds: Datastore,
  args: Pick<DeleteArgs, 'name' | 'yes'>,
  io: Io,
): Promise<ExitCode> {
  requirePoolName(args.name);
  const pool = await ds.pools.get(args.name);
  if (!pool) throw new CliError(`IPPool ${args.name} does not exist`);
  const blocks = await blocksOf(ds, pool);
  refuseIfAllocated(args.name, blocks);
  println(
    io.stdout,
    `${args.yes ? 'Deleting' : 'Would delete'} IPPool ${args.name} (${pool.spec.cidr})${pool.spec.disabled ? '' : ' after disabling it'} and its ${blocks.length} empty block(s)${blocks.length ? `: ${blocks.map((b) => b.metadata.name).join(', ')}` : ''}.`,
  );
  const stop = unconfirmed(io, args.yes, 'delete');
  if (stop !== undefined) return stop;
  const removed = await retryOnConflict(async (round) =>
    deleteOnce(ds, round === 1 ? pool : await ds.pools.get(args.name), args.name),
  );
  println(io.stdout, `IPPool ${args.name} deleted (${removed} empty block(s) removed).`);
  return EXIT.OK;
}

/**
 * The write steps, once: disable `pool` (as last read), re-list its blocks, delete each with
 * resourceVersion + uid preconditions, then the pool with its own.
 * @returns how many blocks were deleted
 * @throws ConflictError when a compare-and-swap or a precondition lost (the caller retries);
 *   CliError when the pool is gone or an allocation appeared
 */
async function deleteOnce(ds: Datastore, pool: IPPool | undefined, name: string): Promise<number> {
  if (!pool) throw new CliError(`IPPool ${name} was deleted meanwhile`);
  const disabled = pool.spec.disabled
    ? pool
    : await ds.pools.update({ ...pool, spec: { ...pool.spec, disabled: true } });
  const blocks = await blocksOf(ds, disabled);
  refuseIfAllocated(name, blocks);
  for (const block of blocks)
    await ds.blocks.delete(block.metadata.name, {
      resourceVersion: block.metadata.resourceVersion,
      uid: block.metadata.uid,
    });
  await ds.pools.delete(name, {
    resourceVersion: disabled.metadata.resourceVersion,
    uid: disabled.metadata.uid,
  });
  return blocks.length;
}

export function poolDeleteCommand(ctx: CommandContext) {
  return defineCommand<DeleteArgs>({
    ctx,
    command: 'delete <name>',
    describe: 'Delete a pool that holds no allocations (and its empty blocks)',
    builder: (y) =>
      withYes(y.positional('name', { type: 'string', demandOption: true, describe: 'IPPool name' }))
        .example('$0 pool delete old-v4', 'Show what would be deleted')
        .example('$0 pool delete old-v4 --yes', 'Delete it (refused while addresses are allocated from it)'),
    prepare: (args) => requirePoolName(args.name),
    run: (args, conn) => deletePool(conn.ds, args, ctx.io),
  });
}
