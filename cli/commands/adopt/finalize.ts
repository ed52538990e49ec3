/**
 * `ipamctl adopt finalize [-o table|json|yaml] [-q]`: read-only. Whether adoption mode may be
 * switched off — every Node with a podCIDR in a podCIDR pool opted in, every live pod's address in
 * such a pool allocated in an IPAMBlock (core's finalizeBlockers; docs/design-cli.md §adopt
 * finalize) — and the helm command that does it. Changes nothing: the setting is the chart's.
 * Exit 0 ready, 1 blockers (or no podCIDR pool), 2 could not read.
 */
import { finalizeBlockers, isReadyToFinalize } from 'blockipam/core';
import type { Datastore } from 'blockipam/core';
import { readAdoptionInput } from '../../adopt/read.ts';
import { printFinalize } from '../../adopt/finalize-print.ts';
import { defineCommand, progressTo, withFormat } from '../../command.ts';
import type { CommandContext, GlobalFlags } from '../../command.ts';
import { EXIT } from '../../io.ts';
import type { ExitCode, Io } from '../../io.ts';
import type { Format } from '../../output.ts';

interface AdoptFinalizeArgs extends GlobalFlags {
  output: Format;
  quiet: boolean;
}

export function adoptFinalizeCommand(ctx: CommandContext) {
  return defineCommand<AdoptFinalizeArgs>({
    ctx,
    command: 'finalize',
    describe:
      'Read-only: whether adoption mode may be switched off (every node adopted, every pod address recorded); changes nothing',
    builder: (y) =>
      withFormat(y)
        .option('quiet', { alias: 'q', type: 'boolean', default: false, describe: 'No progress on stderr' })
        .example(
          '$0 adopt finalize',
          "Exit 0 with the helm upgrade that sets adopt.hostLocalStore=''; exit 1 listing nodes not adopted and pod IPs not recorded",
        )
        .example('$0 adopt finalize -o json', 'The verdict for a script')
        .epilog(
          "It changes nothing in the cluster: adoption mode is the chart's adopt.hostLocalStore, switched off with helm.",
        ),
    run: (args, conn) => adoptFinalize(conn.ds, args, ctx.io),
  });
}

/**
 * Reads the cluster, judges, prints.
 * @returns 0 ready, 1 blockers or no podCIDR pool
 * @throws what the LISTs throw
 */
async function adoptFinalize(ds: Datastore, args: AdoptFinalizeArgs, io: Io): Promise<ExitCode> {
  const input = await readAdoptionInput(ds, args.quiet ? undefined : progressTo(io.stderr));
  const blockers = finalizeBlockers(input);
  printFinalize(io.stdout, args.output, blockers);
  return isReadyToFinalize(blockers) ? EXIT.OK : EXIT.PROBLEMS;
}
