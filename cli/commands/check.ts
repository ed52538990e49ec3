/**
 * `ipamctl check`: audits everything against everything without locking the cluster
 * (docs/design-cli.md §check). Exit 0 clean, 1 problems (a leak only when still held
 * `--confirm-after` seconds after its owner was seen gone), 2 could not check.
 */
import { accessSync, constants, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { deletionQueueDirOf } from 'blockipam/core/cni';
import { runAudit } from '../audit/audit.ts';
import { buildReport, writeReport } from '../audit/report.ts';
import { printSummary } from '../audit/summary.ts';
import { defineCommand, integerFlag, nonEmptyFlag, progressTo } from '../command.ts';
import type { CommandContext, GlobalFlags } from '../command.ts';
import { clusterIdentity } from '../connect.ts';
import type { Connection } from '../connect.ts';
import { CliError, EXIT, println } from '../io.ts';
import type { ExitCode, Io } from '../io.ts';

interface CheckArgs extends GlobalFlags {
  output?: string;
  /** Always set (default 20); optional only in the type yargs infers for a coerced option. */
  limit?: number;
  quiet: boolean;
  /** Always set (default 30); optional only in the type yargs infers for a coerced option. */
  confirmAfter?: number;
  deletionQueue?: string;
}

// 20 findings per kind: a screenful; -o FILE has them all.
const DEFAULT_LIMIT = 20;
// 30 s: a Pod object deleted with grace 0 disappears 1–5 s before the runtime's CNI DEL
// (kubelet v1.37 + containerd 2.4, measured); 30 s is 6× that, and is waited only when an owner
// finding exists. A monitoring job must not alarm on a normal deletion.
const DEFAULT_CONFIRM_AFTER_S = 30;
// 1 h: longer would hold the pod LIST's verdict past any useful meaning.
const MAX_CONFIRM_AFTER_S = 3600;
// The chart's agent.runDir (/var/run/blockipam) and the agent's --ipam-socket in it.
const DEFAULT_DELETION_QUEUE = deletionQueueDirOf('/var/run/blockipam/agent/ipam.sock');

export function checkCommand(ctx: CommandContext) {
  return defineCommand<CheckArgs, ReportFiles>({
    ctx,
    command: 'check',
    describe: 'Audit IPAM state against pools, nodes and pods (read-only, no lock)',
    builder: (y) =>
      y
        .option('output', {
          alias: 'o',
          type: 'string',
          coerce: nonEmptyFlag('-o/--output', 'a FILE to write the report to'),
          describe: 'Write the JSON report (for release --from-report) to FILE',
        })
        .option('limit', {
          type: 'string',
          // no `default`: yargs would put it in for a flag given without a value
          defaultDescription: String(DEFAULT_LIMIT),
          coerce: integerFlag('limit', { min: 0, what: '0 = all' }),
          describe: 'Findings printed per problem kind (integer, 0 = all)',
        })
        .option('confirm-after', {
          type: 'string',
          // no `default`: yargs would put it in for a flag given without a value
          defaultDescription: String(DEFAULT_CONFIRM_AFTER_S),
          coerce: integerFlag('confirm-after', { min: 0, max: MAX_CONFIRM_AFTER_S, what: 'seconds' }),
          describe:
            'Seconds a suspected leak must stay allocated after its pod or node was seen gone before it is reported (0 = at once)',
        })
        .option('deletion-queue', {
          type: 'string',
          // no `default`: the default is read only when it exists
          defaultDescription: DEFAULT_DELETION_QUEUE,
          coerce: nonEmptyFlag('--deletion-queue', 'a directory'),
          describe:
            "This node's queue of DELs waiting for the agent (their addresses stay allocated: they look leaked); each is shown, a leak it explains says so. Root-only: the default is read only when it exists, i.e. on a node as root",
        })
        .option('quiet', { alias: 'q', type: 'boolean', default: false, describe: 'No progress on stderr' })
        .example(
          '$0 check',
          'Audit the cluster; exit 0 when clean, 1 with problems, 2 when it could not check',
        )
        .example('$0 check -o report.json', 'Also write a report that ipamctl release --from-report accepts')
        .example('$0 check --kubeconfig admin.kubeconfig --limit 0', 'Print every finding')
        .example('$0 check --confirm-after 0', 'Report suspected leaks without waiting for a late CNI DEL')
        .example(
          'sudo $0 check --deletion-queue DIR',
          "Also show this node's queued DELs (DIR: del-queue beside the agent's IPAM socket)",
        ),
    prepare: (args) => {
      const reportFile =
        args.output === undefined ? undefined : resolve(ctx.io.cwd ?? process.cwd(), args.output);
      // refused before the audit, not after it ran (EISDIR at the write)
      if (reportFile !== undefined && statSync(reportFile, { throwIfNoEntry: false })?.isDirectory())
        throw new CliError(`-o/--output ${JSON.stringify(args.output)} is a directory: name a FILE in it`);
      return { reportFile, deletionQueue: queueDir(args.deletionQueue, ctx.io) };
    },
    run: (args, conn, files) => check(args, conn, files, ctx.io),
  });
}

/** Where `check` writes its report and reads the node's deletion queue, checked before connecting. */
interface ReportFiles {
  reportFile: string | undefined;
  deletionQueue: string | undefined;
}

async function check(
  args: CheckArgs,
  conn: Connection,
  { reportFile, deletionQueue }: ReportFiles,
  io: Io,
): Promise<ExitCode> {
  try {
    const cluster = await clusterIdentity(conn);
    const confirmAfterS = args.confirmAfter ?? DEFAULT_CONFIRM_AFTER_S;
    const result = await runAudit(conn.ds, {
      confirmAfterMs: confirmAfterS * 1000,
      ...(deletionQueue === undefined ? {} : { deletionQueue }),
      ...(io.sleep ? { sleep: io.sleep } : {}),
      ...(args.quiet
        ? {}
        : {
            progress: progressTo(io.stderr),
            onConfirmWait: (suspects: number) =>
              println(
                io.stderr,
                `${suspects} suspected leak(s): re-checking in ${confirmAfterS} s (a runtime's CNI DEL may follow a pod's deletion; --confirm-after 0 skips the wait)`,
              ),
          }),
    });
    const report = buildReport(result, cluster);
    if (reportFile !== undefined) await writeReport(reportFile, report);
    printSummary(io.stdout, report, args.limit ?? DEFAULT_LIMIT);
    if (args.output) println(io.stdout, `Report written to ${args.output}`);
    return report.problemCount === 0 ? EXIT.OK : EXIT.PROBLEMS;
  } catch (error) {
    println(io.stderr, 'ipamctl check: could not check');
    throw error;
  }
}

/**
 * The deletion queue to read: `--deletion-queue DIR` (one that does not exist reads as empty: the
 * queue is made at its first entry; one that is not a readable directory is a usage error, exit
 * 2), else the chart's default when it exists and can be read (not as another user than root).
 */
function queueDir(given: string | undefined, io: Io): string | undefined {
  if (given === undefined) {
    const dir = DEFAULT_DELETION_QUEUE;
    try {
      if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory()) return undefined;
      accessSync(dir, constants.R_OK | constants.X_OK);
      return dir;
    } catch {
      return undefined; // EACCES: the agent's directory is root-only
    }
  }
  const dir = resolve(io.cwd ?? process.cwd(), given);
  let isDirectory: boolean | undefined;
  try {
    isDirectory = statSync(dir, { throwIfNoEntry: false })?.isDirectory();
    if (isDirectory) accessSync(dir, constants.R_OK | constants.X_OK);
  } catch (error) {
    throw new CliError(
      `cannot read the deletion queue ${given}: ${(error as Error).message} (run check on the node as root)`,
    );
  }
  if (isDirectory === false)
    throw new CliError(`--deletion-queue ${JSON.stringify(given)} is not a directory`);
  return dir;
}
