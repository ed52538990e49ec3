/**
 * The human summary of a check: what was read, then problems grouped by kind (each kind's title,
 * count and the first `limit` findings naming their objects, each followed by what to do when the
 * finding says), then information, then one verdict line. Written to stdout.
 */
import { println } from '../io.ts';
import type { TextOut } from '../io.ts';
import { PROBLEM_KINDS } from './problems.ts';
import type { ProblemKind } from './problems.ts';
import type { Report } from './report.ts';

/**
 * Prints the summary of `report`.
 * @param limit findings printed per kind; 0 = all
 */
export function printSummary(out: TextOut, report: Report, limit: number): void {
  const { counts, resourceVersions } = report;
  println(out, `Cluster ${report.cluster.server} (kube-system uid ${report.cluster.kubeSystemUID})`);
  println(
    out,
    `Read ${counts.pools} pools, ${counts.blocks} blocks (${counts.allocations} allocations), ${counts.nodes} nodes, ${counts.pods} pods`,
  );
  println(
    out,
    `  at resourceVersions ${Object.entries(resourceVersions)
      .sort(([a], [b]) => (a === 'ipamblocks' ? -1 : b === 'ipamblocks' ? 1 : a.localeCompare(b)))
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}`,
  );
  const queue = report.deletionQueue;
  if (queue) {
    const unreadable = queue.entries.filter((e) => 'error' in e).length;
    println(
      out,
      `  deletion queue ${queue.dir}: ${queue.entries.length - unreadable} DEL(s) queued${unreadable > 0 ? `, ${unreadable} file(s) no queued DEL` : ''}`,
    );
  }
  const confirmation = report.confirmation;
  if (confirmation && confirmation.suspects > 0)
    println(
      out,
      `  suspected leaks re-checked ${confirmation.afterSeconds} s after the pod and node LISTs: ${confirmation.suspects - confirmation.released} of ${confirmation.suspects} still held${confirmation.released > 0 ? ` (${confirmation.released} released meanwhile: normal deletions, not reported)` : ''}`,
    );
  for (const severity of ['problem', 'info'] as const) {
    const found = report.problems.filter((p) => p.severity === severity);
    if (found.length === 0) continue;
    println(out);
    println(out, severity === 'problem' ? `Problems (${found.length}):` : `Information (${found.length}):`);
    for (const kind of Object.keys(PROBLEM_KINDS) as ProblemKind[]) {
      const ofKind = found.filter((p) => p.kind === kind);
      if (ofKind.length === 0) continue;
      println(out, `  ${PROBLEM_KINDS[kind]} [${kind}] (${ofKind.length}):`);
      const shown = limit > 0 ? ofKind.slice(0, limit) : ofKind;
      for (const p of shown) {
        println(out, `    - ${p.message}`);
        if (p.hint !== undefined) println(out, `      what to do: ${p.hint}`);
      }
      if (shown.length < ofKind.length)
        println(
          out,
          `    … and ${ofKind.length - shown.length} more (--limit 0 shows all; -o FILE writes them all)`,
        );
    }
  }
  println(out);
  const leaks =
    report.leaked.length > 0
      ? `; ${report.leaked.length} leaked allocation(s) can be released (check -o FILE, then release --from-report FILE)`
      : '';
  println(
    out,
    report.problemCount === 0
      ? 'Check complete: no problems found.'
      : `Check complete: ${report.problemCount} problems found${leaks}.`,
  );
}
