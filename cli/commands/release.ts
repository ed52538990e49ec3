/**
 * `ipamctl release --from-report R… | --ip X`: frees leaked allocations safely
 * (docs/design-cli.md §Release safety). Prints its plan; changes nothing without --yes. An --ip
 * that no IPPool and no IPAMBlock contains is refused input (exit 2): it was never blockipam's to
 * allocate, so "not allocated" would mislead.
 */
import { resolve } from 'node:path';
import { cidrContains, formatIP, parseCidr } from 'blockipam/core';
import type { Datastore, IP } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { ranged } from '../audit/block-checks.ts';
import type { LeakedAllocation } from '../audit/problems.ts';
import { readReport } from '../audit/report.ts';
import type { Report } from '../audit/report.ts';
import { defineCommand, unconfirmed, withYes } from '../command.ts';
import type { CommandContext, GlobalFlags } from '../command.ts';
import { clusterIdentity } from '../connect.ts';
import type { Connection } from '../connect.ts';
import { CliError, EXIT, println } from '../io.ts';
import type { ExitCode, Io } from '../io.ts';
import { lookupAddress, parseAddress } from '../lookup.ts';
import { renderTable } from '../output.ts';
import { applyPlan } from '../release/apply.ts';
import { leakedInEveryReport, recheckAll } from '../release/plan.ts';
import type { Candidate } from '../release/plan.ts';

interface ReleaseArgs extends GlobalFlags {
  fromReport?: string[];
  ip?: string;
  block?: string;
  yes: boolean;
  force: boolean;
}

export function releaseCommand(ctx: CommandContext) {
  return defineCommand<ReleaseArgs, { path: string; report: Report }[]>({
    ctx,
    command: 'release',
    describe: 'Release leaked addresses (from check reports, or one address)',
    builder: (y) =>
      withYes(
        y
          .option('from-report', {
            type: 'string',
            array: true,
            describe: 'Check report(s): release only what EVERY report calls leaked',
          })
          .option('ip', { type: 'string', describe: 'Release this one address' })
          .option('block', {
            type: 'string',
            describe: 'With --ip: the IPAMBlock, when overlapping blocks both hold the address',
          }),
      )
        .option('force', {
          type: 'boolean',
          default: false,
          describe: "With --ip: release even if the address's pod is alive or a live pod has the IP",
        })
        .conflicts('from-report', 'ip')
        .check((a) => {
          if (!(a.fromReport as string[] | undefined)?.length && a.ip === undefined)
            throw new Error('Give --from-report FILE… or --ip ADDRESS.');
          if (a.force && !a.ip) throw new Error('--force only applies to --ip.');
          return true;
        })
        .example('$0 check -o r1.json; sleep 600; $0 check -o r2.json', 'Two reports some minutes apart …')
        .example(
          '$0 release --from-report r1.json r2.json',
          '… show what both call leaked and is still leaked now',
        )
        .example('$0 release --from-report r1.json r2.json --yes', '… and release it')
        .example('$0 release --ip 10.244.3.70 --yes', 'Release one address (refused while its pod is alive)'),
    // Checked before connecting: a bad address or report fails without touching the cluster.
    prepare: (args) => {
      if (args.ip !== undefined) parseAddress(args.ip);
      return Promise.all(
        (args.fromReport ?? []).map(async (path) => ({
          path,
          report: await readReport(resolve(ctx.io.cwd ?? process.cwd(), path)),
        })),
      );
    },
    run: async (args, conn, reports) => {
      const candidates =
        args.ip !== undefined ? await byAddress(conn.ds, args) : await fromReports(conn, reports);
      return execute(conn.ds, candidates, args, ctx.io);
    },
  });
}

async function fromReports(
  conn: Connection,
  reports: Parameters<typeof leakedInEveryReport>[0],
): Promise<Candidate[]> {
  const cluster = await clusterIdentity(conn);
  return recheckAll(conn.ds, leakedInEveryReport(reports, cluster.kubeSystemUID));
}

/**
 * The allocations `release --ip` would free, each re-checked (unless --force).
 * @throws CliError for an unparsable address, a bad --block, two holders without --block, or an
 *   address in no IPPool and no IPAMBlock
 */
export async function byAddress(
  ds: Datastore,
  args: Pick<ReleaseArgs, 'ip' | 'block' | 'force'>,
): Promise<Candidate[]> {
  const ip = parseAddress(args.ip ?? '');
  if (args.block !== undefined) await checkBlockArg(ds, args.block, ip);
  const info = await lookupAddress(ds, ip);
  if (info.blocks.length === 0) await checkInAPool(ds, ip);
  const holders = info.holders.filter(
    (h) => args.block === undefined || h.block.metadata.name === args.block,
  );
  if (holders.length > 1)
    throw new CliError(
      `${info.address} is allocated in ${holders.map((h) => h.block.metadata.name).join(' and ')}: name one with --block`,
    );
  // An allocation on a reserved ordinal (a corrupt block) is released like any other: core's
  // releaseHandle removes it without putting the ordinal in `freed`, so it is never handed out.
  const targets: LeakedAllocation[] = holders.map(({ block, ordinal, allocation }) => ({
    ...allocation,
    address: info.address,
    block: block.metadata.name,
    ordinal,
    reason: 'requested',
  }));
  const candidates: Candidate[] = args.force
    ? targets.map((leak) => ({ leak }))
    : await recheckAll(ds, targets);
  // An explicit --ip releases a live owner's address only with --force; the handle/sequence check stays.
  return candidates.map((c) =>
    c.skip && !/no longer allocated/.test(c.skip) ? { ...c, skip: `${c.skip} (--force overrides)` } : c,
  );
}

/** @throws CliError when no IPPool contains `ip` (1 LIST of pools) */
async function checkInAPool(ds: Datastore, ip: IP): Promise<void> {
  const pools = await ds.pools.list();
  if (ranged(pools).some((p) => cidrContains(p.cidr, ip))) return;
  throw new CliError(
    `${formatIP(ip)} is in no IPPool (${pools.map((p) => `${p.metadata.name} ${p.spec.cidr}`).join(', ') || 'there are none'}) and no IPAMBlock: nothing to release`,
  );
}

/** @throws CliError when `--block NAME` does not exist or does not contain `ip` */
async function checkBlockArg(ds: Datastore, name: string, ip: IP): Promise<void> {
  const block = await ds.blocks.get(name);
  if (!block) throw new CliError(`no such IPAMBlock ${name}`);
  const cidr = parseCidr(block.spec.cidr);
  if (!cidr || !cidrContains(cidr, ip))
    throw new CliError(`${formatIP(ip)} is not in IPAMBlock ${name} (${block.spec.cidr})`);
}

/** Prints the skips and the plan, then (with --yes) releases; returns the exit code. */
async function execute(
  ds: KubeDatastore,
  candidates: readonly Candidate[],
  args: ReleaseArgs,
  io: Io,
): Promise<ExitCode> {
  const go = candidates.filter((c) => c.skip === undefined).map((c) => c.leak);
  const skipped = candidates.filter((c) => c.skip !== undefined);
  for (const c of skipped)
    println(
      io.stdout,
      `skip ${c.leak.address} (IPAMBlock ${c.leak.block}, handle ${c.leak.handle}): ${c.skip ?? ''}`,
    );
  if (go.length === 0) {
    println(
      io.stdout,
      args.ip !== undefined && candidates.length === 0
        ? `${args.ip} is not allocated: nothing to release.`
        : 'Nothing to release.',
    );
    return skipped.length > 0 && args.ip !== undefined ? EXIT.PROBLEMS : EXIT.OK;
  }
  println(io.stdout, `${args.yes ? 'Releasing' : 'Would release'} ${go.length} allocation(s):`);
  println(io.stdout, planTable(go));
  return unconfirmed(io, args.yes, 'release these') ?? applyPlan(ds, go, io);
}

function planTable(go: readonly LeakedAllocation[]): string {
  const headers = ['ADDRESS', 'BLOCK', 'HANDLE', 'SEQUENCE', 'POD', 'NODE', 'REASON'];
  const rows = go.map((l) => [
    l.address,
    l.block,
    l.handle,
    l.sequence,
    l.pod ? `${l.namespace ?? ''}/${l.pod}` : '-',
    l.node,
    l.reason,
  ]);
  return renderTable({ headers, rows });
}
