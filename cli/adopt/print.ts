/**
 * `ipamctl adopt plan`'s output: the plan as `-o json|yaml` data, or as tables — one row per
 * podCIDR, one per pod address, then notes, conflicts (each with what to fix) and a verdict.
 */
import type { AdoptionPlan, NodeAdoptionPlan, PodCIDRPlan } from 'blockipam/core';
import { println } from '../io.ts';
import type { TextOut } from '../io.ts';
import { print, renderTable } from '../output.ts';
import type { Cell, Format } from '../output.ts';

/** The plan with its totals, as `-o json|yaml` prints it. */
export function planData(plan: AdoptionPlan): AdoptionPlan & { counts: Record<string, number> } {
  return {
    counts: {
      nodes: plan.nodes.length,
      podCIDRs: plan.nodes.reduce((n, p) => n + p.podCIDRs.length, 0),
      addresses: plan.nodes.reduce((n, p) => n + p.addresses.length, 0),
      conflicts: plan.conflicts.length,
      notes: plan.notes.length,
    },
    ...plan,
  };
}

/** Prints the plan in `format`. */
export function printPlan(out: TextOut, format: Format, plan: AdoptionPlan): void {
  if (format !== 'table') return print(out, format, planData(plan), () => ({ headers: [], rows: [] }));
  const sections = [podCIDRTable(plan.nodes), addressTable(plan.nodes)];
  if (plan.notes.length > 0)
    sections.push(
      [`NOTES (${plan.notes.length}):`, ...plan.notes.map((n) => `  ${n.kind}: ${n.message}`)].join('\n'),
    );
  if (plan.conflicts.length > 0)
    sections.push(
      [
        `CONFLICTS (${plan.conflicts.length}):`,
        ...plan.conflicts.flatMap((c) => [`  ${c.kind}: ${c.message}`, `    what to fix: ${c.fix}`]),
      ].join('\n'),
    );
  sections.push(verdict(plan));
  println(out, sections.join('\n\n'));
}

function podCIDRTable(nodes: readonly NodeAdoptionPlan[]): string {
  const rows = nodes.flatMap((node) => {
    const count = (cidr: string): number => node.addresses.filter((a) => a.podCIDR === cidr).length;
    const row = (p: PodCIDRPlan | undefined): Cell[] => [
      node.node,
      p?.cidr ?? '(none)',
      p?.pool === undefined ? '-' : `${p.pool}${p.poolDisabled ? ' (disabled)' : ''}`,
      blocksText(p),
      p && p.existingBlocks.length > 0 ? p.existingBlocks.length : '-',
      p ? count(p.cidr) : '-',
      node.conflicts,
    ];
    return node.podCIDRs.length > 0 ? node.podCIDRs.map(row) : [row(undefined)];
  });
  if (rows.length === 0) return 'No Node objects.';
  return renderTable({
    headers: ['NODE', 'PODCIDR', 'POOL', 'BLOCKS', 'EXISTING', 'ADDRESSES', 'NODE CONFLICTS'],
    rows,
  });
}

/** "1 × /24", "4 × /26", "not adoptable yet" (IPv6) or "-" (no pool tiles it). */
function blocksText(p: PodCIDRPlan | undefined): string {
  if (p?.family === 6) return 'not adoptable yet';
  return p?.blocks !== undefined && p.blockSize !== undefined ? `${p.blocks} × /${p.blockSize}` : '-';
}

function addressTable(nodes: readonly NodeAdoptionPlan[]): string {
  const rows = nodes.flatMap((node) =>
    node.addresses.map((a) => [
      a.address,
      `${a.namespace}/${a.pod}`,
      node.node,
      a.podCIDR ?? '(outside)',
      a.block ?? '-',
      a.ordinal ?? '-',
    ]),
  );
  if (rows.length === 0) return 'No pod addresses (host-network, Succeeded and Failed pods are skipped).';
  return renderTable({ headers: ['ADDRESS', 'POD', 'NODE', 'PODCIDR', 'BLOCK', 'ORDINAL'], rows });
}

function verdict(plan: AdoptionPlan): string {
  const addresses = plan.nodes.reduce((n, p) => n + p.addresses.length, 0);
  const scope = `${plan.nodes.length} node(s), ${addresses} pod address(es)`;
  if (plan.conflicts.length === 0)
    return `Plan: ${scope}, no conflict: every pod address can stay where it is. Nothing was changed.`;
  return `Plan: ${scope}, ${plan.conflicts.length} conflict(s): fix each as it says, then run ipamctl adopt plan again. Nothing was changed.`;
}
