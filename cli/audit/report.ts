/**
 * The JSON report of `ipamctl check -o FILE` (format: docs/design-cli.md §Report), and reading
 * reports back for `release --from-report`. A report names the cluster it was taken from (the
 * kube-system namespace UID) and the list resourceVersion of every kind it read.
 */
import { readFile, writeFile } from 'node:fs/promises';
import type { ClusterIdentity } from '../connect.ts';
import { CliError } from '../io.ts';
import type { AuditConfirmation, AuditCounts, AuditResult } from './audit.ts';
import { PROBLEM_KINDS } from './problems.ts';
import type { LeakedAllocation, Problem } from './problems.ts';

export const REPORT_KIND = 'IpamctlCheckReport';
export const REPORT_VERSION = 1;

/** The report document. */
export interface Report {
  kind: typeof REPORT_KIND;
  version: typeof REPORT_VERSION;
  /** RFC 3339: when the first LIST was sent. */
  takenAt: string;
  cluster: ClusterIdentity;
  /** List resourceVersion per kind read. */
  resourceVersions: Record<string, string>;
  counts: AuditCounts;
  /** Problems per kind (information kinds included). */
  byKind: Record<string, number>;
  /** Problems excluding information. */
  problemCount: number;
  /** How owner findings were confirmed; absent in reports of ipamctl before 2026-12. */
  confirmation?: AuditConfirmation;
  problems: Problem[];
  /** Allocations this report calls leaked; release --from-report frees only these. */
  leaked: LeakedAllocation[];
}

/** Builds the report of an audit. */
export function buildReport(result: AuditResult, cluster: ClusterIdentity): Report {
  const byKind: Record<string, number> = {};
  for (const p of result.problems) byKind[p.kind] = (byKind[p.kind] ?? 0) + 1;
  return {
    kind: REPORT_KIND,
    version: REPORT_VERSION,
    takenAt: new Date(result.snapshot.startedAtMs).toISOString(),
    cluster,
    resourceVersions: result.snapshot.resourceVersions,
    counts: result.counts,
    byKind,
    problemCount: result.problems.filter((p) => p.severity === 'problem').length,
    confirmation: result.confirmation,
    problems: result.problems,
    leaked: result.leaked,
  };
}

/** Writes the report as indented JSON. @throws CliError when the file cannot be written */
export async function writeReport(path: string, report: Report): Promise<void> {
  try {
    await writeFile(path, `${JSON.stringify(report, null, 2)}\n`);
  } catch (error) {
    throw new CliError(`cannot write the report ${path}: ${(error as Error).message}`);
  }
}

/**
 * Reads and shape-checks a report (the fields release relies on).
 * @throws CliError naming the file and what is wrong
 */
export async function readReport(path: string): Promise<Report> {
  let doc: unknown;
  try {
    doc = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new CliError(`cannot read the report ${path}: ${(error as Error).message}`);
  }
  const bad = (what: string): CliError => new CliError(`${path} is not an ipamctl check report: ${what}`);
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw bad('not a JSON object');
  const report = doc as Partial<Report>;
  if (report.kind !== REPORT_KIND) throw bad(`kind is ${JSON.stringify(report.kind)}, want ${REPORT_KIND}`);
  if (report.version !== REPORT_VERSION)
    throw bad(`version ${JSON.stringify(report.version)} is not supported (want ${REPORT_VERSION})`);
  if (typeof report.cluster?.kubeSystemUID !== 'string' || report.cluster.kubeSystemUID === '')
    throw bad('no cluster.kubeSystemUID');
  if (!Array.isArray(report.leaked)) throw bad('no leaked list');
  for (const [i, entry] of (report.leaked as unknown[]).entries()) {
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry))
      throw bad(`leaked entry ${i + 1} is not an object`);
    const leak = entry as Partial<LeakedAllocation>;
    const ok =
      typeof leak.address === 'string' &&
      typeof leak.block === 'string' &&
      Number.isInteger(leak.ordinal) &&
      typeof leak.handle === 'string' &&
      Number.isInteger(leak.sequence) &&
      typeof leak.reason === 'string' &&
      leak.reason in PROBLEM_KINDS;
    if (!ok)
      throw bad(
        `leaked entry ${i + 1} ${JSON.stringify(leak).slice(0, 200)} lacks address, block, ordinal, handle, sequence or reason`,
      );
  }
  return report as Report;
}
