/**
 * `ipamctl adopt plan [--node N] [-o table|json|yaml] [-q]`: read-only. For each Node, its
 * podCIDRs, the pool and blocks blockipam would hold them in, its live pods' addresses with the
 * block and ordinal each lands on, and every conflict that stops keeping them in place, each
 * saying what to fix (core's planAdoption; docs/design-cli.md §adopt plan). Exit 0 no conflict,
 * 1 conflicts, 2 could not plan.
 */
import { planAdoption } from 'blockipam/core';
import type { AdoptionPlan, Datastore } from 'blockipam/core';
import { readAdoptionInput } from '../../adopt/read.ts';
import { printPlan } from '../../adopt/print.ts';
import { defineCommand, nodeNameFlag, progressTo, withFormat } from '../../command.ts';
import type { CommandContext, GlobalFlags } from '../../command.ts';
import { CliError, EXIT } from '../../io.ts';
import type { ExitCode, Io } from '../../io.ts';
import type { Format } from '../../output.ts';

interface AdoptPlanArgs extends GlobalFlags {
  output: Format;
  node?: string;
  quiet: boolean;
}

export function adoptPlanCommand(ctx: CommandContext) {
  return defineCommand<AdoptPlanArgs>({
    ctx,
    command: 'plan',
    describe: "Read-only: each node's podCIDRs as blocks, its pods' addresses, and what stops adopting them",
    builder: (y) =>
      withFormat(y)
        .option('node', {
          type: 'string',
          requiresArg: true,
          coerce: nodeNameFlag,
          describe:
            'Report this node only (the whole cluster is still read: podCIDRs and addresses are judged against every node)',
        })
        .option('quiet', { alias: 'q', type: 'boolean', default: false, describe: 'No progress on stderr' })
        .example(
          '$0 adopt plan',
          'Every node: podCIDRs, pool, blocks, pod addresses, conflicts; exit 1 on conflicts',
        )
        .example('$0 adopt plan --node worker-1 -o json', "One node's plan for a script"),
    run: (args, conn) => adoptPlan(conn.ds, args, ctx.io),
  });
}

/**
 * Reads the cluster, plans, prints.
 * @returns 0 no conflict, 1 conflicts
 * @throws CliError when `--node` names no Node object; what the LISTs throw
 */
async function adoptPlan(ds: Datastore, args: AdoptPlanArgs, io: Io): Promise<ExitCode> {
  const input = await readAdoptionInput(ds, args.quiet ? undefined : progressTo(io.stderr));
  const plan = only(planAdoption(input), args.node);
  printPlan(io.stdout, args.output, plan);
  return plan.conflicts.length === 0 ? EXIT.OK : EXIT.PROBLEMS;
}

/** The plan of one node (its conflicts and notes), or all of it. */
function only(plan: AdoptionPlan, node: string | undefined): AdoptionPlan {
  if (node === undefined) return plan;
  const nodes = plan.nodes.filter((n) => n.node === node);
  if (nodes.length === 0)
    throw new CliError(`Node ${node} does not exist (kubectl get nodes lists them). Nothing was changed.`);
  return {
    nodes,
    conflicts: plan.conflicts.filter((c) => c.node === node),
    notes: plan.notes.filter((n) => n.node === node),
  };
}
