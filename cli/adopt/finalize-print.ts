/**
 * `ipamctl adopt finalize`'s output: the verdict as `-o json|yaml` data, or as text — the nodes not
 * adopted and the pod IPs not recorded, each with its next step, then the verdict: the helm
 * command that switches adoption mode off, and what changes after it.
 */
import { isReadyToFinalize } from 'blockipam/core';
import type { FinalizeBlockers, UnrecordedPodIPs } from 'blockipam/core';
import { println } from '../io.ts';
import type { TextOut } from '../io.ts';
import { print } from '../output.ts';
import type { Format } from '../output.ts';

/** Unrecorded addresses named per node in the text output; the count covers the rest. */
export const UNRECORDED_SAMPLE = 5;

/** The command that switches adoption mode off (the chart holds the setting). */
export const SWITCH_OFF = "helm upgrade RELEASE CHART --reuse-values --set adopt.hostLocalStore=''";

const AFTER =
  "After it every agent writes its conflist on every node (new nodes too) and reads no host-local store: no rollback to host-local any more. kindnetd's DaemonSet may be deleted (kubectl -n kube-system delete daemonset kindnet); host-local's store files stay on disk and may be removed.";

const UNCHANGED =
  'Nothing was changed: adoption mode is the chart setting adopt.hostLocalStore, switched by helm only.';

/** The verdict with its totals, as `-o json|yaml` prints it; `next` only when ready. */
export function finalizeData(blockers: FinalizeBlockers): FinalizeBlockers & {
  ready: boolean;
  counts: Record<string, number>;
  next?: string;
} {
  const ready = isReadyToFinalize(blockers);
  return {
    ready,
    counts: {
      podCIDRPools: blockers.podCIDRPools.length,
      nodes: blockers.nodes,
      addresses: blockers.addresses,
      notAdopted: blockers.notAdopted.length,
      unrecorded: unrecordedCount(blockers),
    },
    ...blockers,
    ...(ready ? { next: SWITCH_OFF } : {}),
  };
}

/** Prints the verdict in `format`. */
export function printFinalize(out: TextOut, format: Format, blockers: FinalizeBlockers): void {
  if (format !== 'table')
    return print(out, format, finalizeData(blockers), () => ({ headers: [], rows: [] }));
  println(out, [...sections(blockers), UNCHANGED].join('\n\n'));
}

function sections(blockers: FinalizeBlockers): string[] {
  if (blockers.podCIDRPools.length === 0)
    return [
      'not ready: no podCIDR pool (IPPool spec.podCIDRBlocks): nothing is adopted, so there is no adoption mode to switch off. Adopting starts with ipamctl adopt plan (docs/install.md §Adopting a host-local cluster).',
    ];
  const scope = `${blockers.nodes} node(s) with a podCIDR in podCIDR pool ${blockers.podCIDRPools.join(', ')}, ${blockers.addresses} live pod IP(s) in it`;
  if (isReadyToFinalize(blockers))
    return [
      `${scope}.`,
      `ready: every node adopted, every pod address recorded; switch adoption mode off: ${SWITCH_OFF}`,
      AFTER,
    ];
  const out: string[] = [];
  if (blockers.notAdopted.length > 0)
    out.push(
      [
        `NODES NOT ADOPTED (${blockers.notAdopted.length}):`,
        ...blockers.notAdopted.flatMap((n) => [
          `  ${n.node}: podCIDR ${n.podCIDRs.join(', ')} in podCIDR pool ${n.pools.join(', ')}, no blockipam.io/adopt=true: host-local still serves it`,
          `    next: ${n.fix}`,
        ]),
      ].join('\n'),
    );
  if (blockers.unrecorded.length > 0)
    out.push(
      [
        `POD IPS NOT RECORDED (${unrecordedCount(blockers)} on ${blockers.unrecorded.length} node(s)):`,
        ...blockers.unrecorded.flatMap((u) => [`  ${unrecordedLine(u)}`, `    next: ${u.fix}`]),
      ].join('\n'),
    );
  const parts = [
    ...(blockers.notAdopted.length > 0 ? [`${blockers.notAdopted.length} node(s) not adopted`] : []),
    ...(blockers.unrecorded.length > 0 ? [`${unrecordedCount(blockers)} pod IP(s) not recorded`] : []),
  ];
  out.push(
    `${scope}.\nnot ready: ${parts.join(', ')}: do each next step, then run ipamctl adopt finalize again. Keep adoption mode on (adopt.hostLocalStore set) until then.`,
  );
  return out;
}

const STATE_TEXT: Record<UnrecordedPodIPs['state'], string> = {
  adopted: 'adopted',
  'not-adopted': 'not adopted',
  'no-node': 'no Node object',
};

function unrecordedLine(u: UnrecordedPodIPs): string {
  const shown = u.addresses.slice(0, UNRECORDED_SAMPLE);
  const more = u.addresses.length > shown.length ? `, … ${u.addresses.length - shown.length} more` : '';
  const list = shown.map((a) => `${a.address} (${a.namespace}/${a.pod})`).join(', ');
  return `${u.node} (${STATE_TEXT[u.state]}): ${u.addresses.length} pod IP(s) no IPAMBlock allocates: ${list}${more}`;
}

function unrecordedCount(blockers: FinalizeBlockers): number {
  return blockers.unrecorded.reduce((n, u) => n + u.addresses.length, 0);
}
