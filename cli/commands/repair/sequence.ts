/**
 * `ipamctl repair sequence BLOCK [--yes]`: gives a block whose sequence numbers are unsafe (above
 * 2^52: `check` reports `unsafe-sequence`) sequences core can write again, with one compare-and-swap
 * UPDATE under the block's resourceVersion (docs/design-cli.md §repair sequence). Prints the plan;
 * changes nothing without --yes. Refused (exit 2) when every sequence of the block is safe.
 */
import { blockNameOf, isDnsSubdomain, isInvalid, parseCidr } from 'blockipam/core';
import type { Datastore, IPAMBlock } from 'blockipam/core';
import { defineCommand, quoted, retryOnConflict, unconfirmed, withYes } from '../../command.ts';
import type { CommandContext, GlobalFlags } from '../../command.ts';
import { CliError, EXIT, println } from '../../io.ts';
import type { ExitCode, Io } from '../../io.ts';
import { renderTable } from '../../output.ts';
import { planSequenceRepair } from '../../repair/sequence-plan.ts';
import type { SequenceRepair } from '../../repair/sequence-plan.ts';

interface SequenceArgs extends GlobalFlags {
  block: string;
  yes: boolean;
}

/**
 * The block name `text` names: a block name as is, or a CIDR as its block name (10.244.0.0/26 →
 * 10-244-0-0-26). Checked before any request.
 * @throws CliError when it is neither
 */
export function blockNameArg(text: string): string {
  const cidr = text.includes('/') ? parseCidr(text) : undefined;
  if (cidr) return blockNameOf(cidr);
  if (!isDnsSubdomain(text))
    throw new CliError(
      `BLOCK ${quoted(text)} is neither an IPAMBlock name (e.g. 10-244-0-0-26) nor a block CIDR`,
    );
  return text;
}

/**
 * The whole command on `ds`: read, plan, print, and with `args.yes` write — a write that loses the
 * compare-and-swap starts over from a fresh GET, at most 5 rounds (a node's release in the block, which a frozen block still takes, bumps its
 * resourceVersion).
 * @param args.nowMs the clock (ms) the repaired sequences start from; default Date.now()
 * @returns 0 written (or repaired meanwhile by another writer), 3 plan only (no --yes)
 * @throws CliError when the block does not exist, every sequence of it is safe, or the API server
 *   refuses to lower its sequence (a CRD without that rule); ConflictError after 5 lost rounds
 */
export async function repairSequence(
  ds: Datastore,
  args: { block: string; yes: boolean; nowMs?: number },
  io: Io,
): Promise<ExitCode> {
  const name = blockNameArg(args.block);
  return retryOnConflict(async (round) => {
    if (round > 1) println(io.stdout, `IPAMBlock ${name} changed meanwhile: reading it again.`);
    const block = await ds.blocks.get(name);
    if (!block) throw new CliError(`IPAMBlock ${name} does not exist`);
    const plan = planSequenceRepair(block, args.nowMs ?? Date.now());
    if (!plan) {
      if (round === 1)
        throw new CliError(
          `IPAMBlock ${name} has no unsafe sequence (spec.sequence ${block.spec.sequence} and every allocation's are at most 2^52): nothing to repair. Nothing was changed.`,
        );
      println(
        io.stdout,
        `IPAMBlock ${name} has no unsafe sequence any more (written meanwhile): nothing to do.`,
      );
      return EXIT.OK;
    }
    printPlan(io, block, plan, args.yes);
    const stop = unconfirmed(io, args.yes, 'write these sequences');
    if (stop !== undefined) return stop;
    await ds.blocks.update(plan.repaired).catch((error: unknown) => {
      if (isInvalid(error) && /never decreases/.test(error.message))
        throw new CliError(
          `the API server refused to lower spec.sequence of IPAMBlock ${name}: ${error.message}. Its CRD must let a sequence above 2^52 be lowered (apply crds/ipamblocks.yaml of this release). Nothing was changed.`,
        );
      throw error;
    });
    println(io.stdout, `IPAMBlock ${name} repaired: spec.sequence is ${plan.repaired.spec.sequence}.`);
    return EXIT.OK;
  });
}

function printPlan(io: Io, block: IPAMBlock, plan: SequenceRepair, yes: boolean): void {
  const name = block.metadata.name;
  println(
    io.stdout,
    `IPAMBlock ${name} (resourceVersion ${block.metadata.resourceVersion ?? '?'}): ${plan.unsafe.join('; ')}`,
  );
  println(io.stdout, `${yes ? 'Writing' : 'Would write'}:`);
  const rows = plan.changes.map((c) => [
    c.ordinal === undefined ? 'spec.sequence' : `allocation ${c.ordinal}`,
    c.handle ?? '-',
    c.from,
    c.to,
  ]);
  println(io.stdout, renderTable({ headers: ['SEQUENCE', 'HANDLE', 'FROM', 'TO'], rows }));
}

export function repairSequenceCommand(ctx: CommandContext) {
  return defineCommand<SequenceArgs>({
    ctx,
    command: 'sequence <block>',
    describe: 'Lower sequence numbers above 2^52 in one block (check: unsafe-sequence)',
    builder: (y) =>
      withYes(
        y.positional('block', {
          type: 'string',
          demandOption: true,
          describe: 'IPAMBlock name (10-244-0-0-26) or CIDR (10.244.0.0/26)',
        }),
      )
        .example('$0 repair sequence 10-244-0-0-26', 'Show the sequences that would be written')
        .example('$0 repair sequence 10-244-0-0-26 --yes', 'Write them (compare-and-swap on the block)'),
    prepare: (args) => blockNameArg(args.block),
    run: (args, conn) => repairSequence(conn.ds, args, ctx.io),
  });
}
