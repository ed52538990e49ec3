/**
 * The JSON report of `ipamctl check -o FILE` (format: docs/design-cli.md §Report), and reading
 * reports back for `release --from-report`. A report names the cluster it was taken from (the
 * kube-system namespace UID) and the list resourceVersion of every kind it read.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { Ajv } from 'ajv';
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { ClusterIdentity } from '../connect.ts';
import { CliError } from '../io.ts';
import type { AuditConfirmation, AuditCounts, AuditResult } from './audit.ts';
import type { LeakedAllocation, Problem } from './problems.ts';
import type { DeletionQueueView } from './queue-checks.ts';
import { REPORT_KIND, REPORT_VERSION, reportSchema } from './report-schema.ts';

export { REPORT_KIND, REPORT_VERSION } from './report-schema.ts';

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
  /** The node's deletion queue, when check read one (`--deletion-queue`): every file in it. */
  deletionQueue?: DeletionQueueView;
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
    ...(result.deletionQueue ? { deletionQueue: result.deletionQueue } : {}),
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

let validator: ValidateFunction<Report> | undefined;

/** The compiled schema (compiled on first use: only `release --from-report` reads reports). */
function validateReport(): ValidateFunction<Report> {
  return (validator ??= new Ajv({ strict: true, allErrors: false }).compile<Report>(reportSchema));
}

/** The operator's sentence for the first schema failure (`leaked entry 2: ordinal must be integer`). */
function problemOf(error: ErrorObject | undefined, doc: unknown): string {
  if (!error) return 'invalid';
  const path = error.instancePath.split('/').slice(1);
  const field =
    typeof doc === 'object' && doc !== null ? (doc as Record<string, unknown>)[path[0] ?? ''] : undefined;
  if (path.length === 0) {
    if (error.keyword === 'type') return 'not a JSON object';
    return `no ${String((error.params as { missingProperty?: string }).missingProperty)}`;
  }
  if (path[0] === 'kind') return `kind is ${JSON.stringify(field)}, want ${REPORT_KIND}`;
  if (path[0] === 'version')
    return `version ${JSON.stringify(field)} is not supported (want ${REPORT_VERSION})`;
  if (path[0] === 'leaked' && path[1] !== undefined) {
    const entry = `leaked entry ${Number(path[1]) + 1}`;
    if (path.length === 2)
      return error.keyword === 'type'
        ? `${entry} is not an object`
        : `${entry} ${JSON.stringify((field as unknown[])[Number(path[1])]).slice(0, 200)} lacks ${String((error.params as { missingProperty?: string }).missingProperty)}`;
    return `${entry}: ${path.slice(2).join('.')} ${error.message ?? 'is invalid'}`;
  }
  return `${path.join('.')} ${error.message ?? 'is invalid'}`;
}

/**
 * Reads and checks a report against {@link reportSchema} (the fields release relies on).
 * @throws CliError naming the file and the first thing wrong, e.g. `kind is "Something"`,
 *   `leaked entry 1 is not an object`, `leaked entry 2: ordinal must be integer`
 */
export async function readReport(path: string): Promise<Report> {
  let doc: unknown;
  try {
    doc = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new CliError(`cannot read the report ${path}: ${(error as Error).message}`);
  }
  const validate = validateReport();
  if (!validate(doc))
    throw new CliError(`${path} is not an ipamctl check report: ${problemOf(validate.errors?.[0], doc)}`);
  return doc;
}
