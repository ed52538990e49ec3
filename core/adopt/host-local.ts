/**
 * host-local's store on a node, planned for an import (pure: the agent reads the store's files,
 * host-local-file.ts; this decides).
 *
 * The import of one node ({@link planHostLocalImport}): each file's address is matched to a live
 * pod on the node by `status.podIPs`, placed in the node's block holding it, and recorded under the
 * handle blockipam's DEL of that container will compute (`<network>.<containerID>.<ifname>`, the
 * network being blockipam's conflist's), so the old pod's DEL releases it. A file whose address no
 * live pod on the node holds (or an entry with no valid record, whose address no live pod holds) is
 * reported for quarantine — moved aside, never deleted — by a caller that plans again over a grace
 * period first: a pod whose address the kubelet has not reported yet (`status.podIPs`) is
 * unmatched for a moment. A file whose address a live pod holds but that cannot be recorded (no
 * block of the node holds it, it sits on a reserved ordinal, another handle holds it, or the entry
 * has no valid record) is a conflict: it stays in the store — which keeps the address from every
 * ADD — and is reported. An address already recorded under the same handle is done: a re-run after
 * any interruption changes nothing.
 */
import { ordinalOf } from '../address/block-cidr.ts';
import { cidrContains, parseIP } from '../address/ip.ts';
import { handleOf } from '../allocator/types.ts';
import { isLivePod, podIPs } from '../allocator/pod-liveness.ts';
import { cidrOf, isAssignable } from '../block/block.ts';
import type { IPAMBlock, Pod } from '../resources.ts';
import type { HostLocalFile } from './host-local-file.ts';

/** One address to record in a block. */
export interface HostLocalImport {
  readonly file: string;
  readonly address: string;
  readonly block: string;
  readonly ordinal: number;
  /** The allocation's owner, as blockipam's ADD for the same container would write it. */
  readonly owner: {
    readonly handle: string;
    readonly network: string;
    readonly namespace: string;
    readonly pod: string;
    readonly podUID?: string;
    readonly node: string;
  };
}

/** A file not imported, and why (it is moved aside, not deleted). */
export interface HostLocalQuarantine {
  readonly file: string;
  readonly why: string;
}

export interface HostLocalImportPlan {
  /** Addresses to record, by block then ordinal. */
  readonly imports: readonly HostLocalImport[];
  /** Files whose address is already recorded under the same handle (a re-run). */
  readonly done: readonly string[];
  /** Entries no live pod on the node holds: to move aside once the grace period has passed. */
  readonly quarantine: readonly HostLocalQuarantine[];
  /** Entries a live pod holds that cannot be recorded: kept in the store, reported. */
  readonly conflicts: readonly HostLocalQuarantine[];
}

/**
 * Plans the import of one node's store.
 * @param input.network blockipam's CNI network name on the node (the handles' first part)
 * @param input.blocks the node's affine blocks (its podCIDR blocks)
 * @param input.pods pods bound to the node (dead and host-network ones are skipped)
 * @param input.unreadable entries named by an address holding no valid record (default none)
 */
export function planHostLocalImport(input: {
  readonly node: string;
  readonly network: string;
  readonly files: readonly HostLocalFile[];
  readonly unreadable?: readonly { readonly file: string; readonly address: string }[];
  readonly pods: readonly Pod[];
  readonly blocks: readonly IPAMBlock[];
}): HostLocalImportPlan {
  const holders = new Map<string, Pod>();
  for (const pod of input.pods)
    if (pod.spec?.nodeName === input.node && isLivePod(pod))
      for (const address of podIPs(pod)) holders.set(address, pod);
  const imports: HostLocalImport[] = [];
  const done: string[] = [];
  const quarantine: HostLocalQuarantine[] = [];
  const conflicts: HostLocalQuarantine[] = [];
  const podName = (pod: Pod): string => `${pod.metadata.namespace ?? ''}/${pod.metadata.name}`;
  for (const u of input.unreadable ?? []) {
    const pod = holders.get(u.address);
    if (pod)
      conflicts.push({
        file: u.file,
        why: `the entry for address ${u.address} of pod ${podName(pod)} holds no container ID: not imported, kept`,
      });
    else
      quarantine.push({
        file: u.file,
        why: `no live pod on node ${input.node} has address ${u.address} (no valid record)`,
      });
  }
  for (const f of [...input.files].sort((a, b) => a.file.localeCompare(b.file))) {
    const handle = handleOf(input.network, f.containerID, f.ifname);
    const pod = holders.get(f.address);
    const ip = parseIP(f.address)!;
    const block = input.blocks.find((b) => cidrContains(cidrOf(b), ip));
    const ordinal = block ? ordinalOf(cidrOf(block), ip) : undefined;
    const held = block && ordinal !== undefined ? block.spec.allocations[ordinal] : undefined;
    if (held?.handle === handle) {
      done.push(f.file);
      continue;
    }
    if (!pod) {
      quarantine.push({
        file: f.file,
        why: `no live pod on node ${input.node} has address ${f.address} (container ${f.containerID})`,
      });
      continue;
    }
    const why =
      !block || ordinal === undefined
        ? `address ${f.address} of pod ${podName(pod)} lies in no block of node ${input.node}`
        : !isAssignable(cidrOf(block), ordinal)
          ? `address ${f.address} of pod ${podName(pod)} is reserved in IPAMBlock ${block.metadata.name} (network, gateway or broadcast)`
          : held
            ? `address ${f.address} of pod ${podName(pod)} is already allocated in IPAMBlock ${block.metadata.name} to handle ${held.handle}`
            : undefined;
    if (why) {
      conflicts.push({ file: f.file, why });
      continue;
    }
    imports.push({
      file: f.file,
      address: f.address,
      block: block!.metadata.name,
      ordinal: ordinal!,
      owner: {
        handle,
        network: input.network,
        namespace: pod.metadata.namespace ?? '',
        pod: pod.metadata.name,
        ...(pod.metadata.uid ? { podUID: pod.metadata.uid } : {}),
        node: input.node,
      },
    });
  }
  imports.sort((a, b) => a.block.localeCompare(b.block) || a.ordinal - b.ordinal);
  return { imports, done, quarantine, conflicts };
}
