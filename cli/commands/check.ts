/**
 * `ipamctl check`: audits everything against everything without locking the cluster
 * (docs/design-cli.md §check). Exit 0 clean, 1 problems, 2 could not check.
 */
import { resolve } from 'node:path';
import { runAudit } from '../audit/audit.ts';
import { buildReport, writeReport } from '../audit/report.ts';
import { printSummary } from '../audit/summary.ts';
import type { Progress } from '../audit/snapshot.ts';
import { defineCommand, integerFlag } from '../command.ts';
import type { CommandContext, GlobalFlags } from '../command.ts';
import { clusterIdentity } from '../connect.ts';
import { EXIT, println } from '../io.ts';
import type { ExitCode, Io } from '../io.ts';
import { withConnection } from './with-connection.ts';

interface CheckArgs extends GlobalFlags {
  output?: string;
  /** Always set (default 20); optional only in the type yargs infers for a coerced option. */
  limit?: number;
  quiet: boolean;
}

// 20 findings per kind: a screenful; -o FILE has them all.
const DEFAULT_LIMIT = 20;
// 1,000 objects: below this a LIST takes well under a second and progress would be noise.
const PROGRESS_THRESHOLD = 1000;

export function checkCommand(ctx: CommandContext) {
  return defineCommand<CheckArgs>({
    ctx,
    command: 'check',
    describe: 'Audit IPAM state against pools, nodes and pods (read-only, no lock)',
    builder: (y) =>
      y
        .option('output', {
          alias: 'o',
          type: 'string',
          describe: 'Write the JSON report (for release --from-report) to FILE',
        })
        .option('limit', {
          type: 'string',
          default: String(DEFAULT_LIMIT),
          coerce: integerFlag('limit', { min: 0, what: '0 = all' }),
          describe: 'Findings printed per problem kind (integer, 0 = all)',
        })
        .option('quiet', { alias: 'q', type: 'boolean', default: false, describe: 'No progress on stderr' })
        .example(
          '$0 check',
          'Audit the cluster; exit 0 when clean, 1 with problems, 2 when it could not check',
        )
        .example('$0 check -o report.json', 'Also write a report that ipamctl release --from-report accepts')
        .example('$0 check --kubeconfig admin.kubeconfig --limit 0', 'Print every finding'),
    run: (args) => check(args, ctx.io),
  });
}

async function check(args: CheckArgs, io: Io): Promise<ExitCode> {
  return withConnection(args, io, async (conn) => {
    try {
      const cluster = await clusterIdentity(conn);
      const result = await runAudit(conn.ds, args.quiet ? {} : { progress: progressTo(io) });
      const report = buildReport(result, cluster);
      if (args.output) await writeReport(resolve(io.cwd ?? process.cwd(), args.output), report);
      printSummary(io.stdout, report, args.limit ?? DEFAULT_LIMIT);
      if (args.output) println(io.stdout, `Report written to ${args.output}`);
      return report.problemCount === 0 ? EXIT.OK : EXIT.PROBLEMS;
    } catch (error) {
      println(io.stderr, 'ipamctl check: could not check');
      throw error;
    }
  });
}

function progressTo(io: Io): Progress {
  return (kind, count) => {
    if (count >= PROGRESS_THRESHOLD) println(io.stderr, `listing ${kind}: ${count} read`);
  };
}
