/**
 * host-local's store on a node, read for an import (pure: the agent lists the directory and
 * reads the files under host-local's lock; this decides). host-local keeps one file per address in
 * `<dataDir>/<network>/`, named by the address, holding `<containerID>\r\n<ifname>` — or the
 * container ID alone, as host-local wrote before v0.8 — besides `lock` and `last_reserved_ip.N`.
 *
 * The import of one node ({@link planHostLocalImport}): each file's address is matched to a live
 * pod on the node by `status.podIPs`, placed in the node's block holding it, and recorded under the
 * handle blockipam's DEL of that container will compute (`<network>.<containerID>.<ifname>`, the
 * network being blockipam's conflist's), so the old pod's DEL releases it. A file no pod on the node
 * holds, or whose address has no block of the node or sits on a reserved ordinal, is reported for
 * quarantine — moved aside, never deleted — by a caller that plans again over a grace period first:
 * a pod whose address the kubelet has not reported yet (`status.podIPs`) is unmatched for a moment. An address already recorded under the same handle is done: a
 * re-run after any interruption changes nothing.
 */
import { ordinalOf } from '../address/block-cidr.ts';
import { cidrContains, formatIP, parseIP } from '../address/ip.ts';
import { handleOf } from '../allocator/types.ts';
import { isLivePod, podIPs } from '../allocator/pod-liveness.ts';
import { cidrOf, isAssignable } from '../block/block.ts';
import type { IPAMBlock, Pod } from '../resources.ts';

/** The ifname of a file in the old, ID-only format: the kubelet's default interface. */
export const DEFAULT_IFNAME = 'eth0';

/** One address file of host-local's store. */
export interface HostLocalFile {
  /** The file's name in the store directory. */
  readonly file: string;
  /** Canonical text of the address the name holds. */
  readonly address: string;
  readonly containerID: string;
  /** The interface; {@link DEFAULT_IFNAME} for a file of the old format. */
  readonly ifname: string;
}

/**
 * Reads one file of the store: undefined for what is no address file (`lock`,
 * `last_reserved_ip.0`, a name that is no IP) and for an empty or malformed content.
 */
export function parseHostLocalFile(file: string, content: string): HostLocalFile | undefined {
  const ip = parseIP(file);
  if (!ip) return undefined;
  const [containerID = '', ifname] = content.split('\r\n').map((part) => part.trim());
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(containerID)) return undefined;
  if (ifname !== undefined && ifname !== '' && !/^[^\s/]{1,15}$/.test(ifname)) return undefined;
  return { file, address: formatIP(ip), containerID, ifname: ifname || DEFAULT_IFNAME };
}

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
  readonly quarantine: readonly HostLocalQuarantine[];
}

/**
 * Plans the import of one node's store.
 * @param input.network blockipam's CNI network name on the node (the handles' first part)
 * @param input.blocks the node's affine blocks (its podCIDR blocks)
 * @param input.pods pods bound to the node (dead and host-network ones are skipped)
 */
export function planHostLocalImport(input: {
  readonly node: string;
  readonly network: string;
  readonly files: readonly HostLocalFile[];
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
    const why = !pod
      ? `no live pod on node ${input.node} has address ${f.address} (container ${f.containerID})`
      : !block || ordinal === undefined
        ? `address ${f.address} of pod ${pod.metadata.namespace ?? ''}/${pod.metadata.name} lies in no block of node ${input.node}`
        : !isAssignable(cidrOf(block), ordinal)
          ? `address ${f.address} of pod ${pod.metadata.namespace ?? ''}/${pod.metadata.name} is reserved in IPAMBlock ${block.metadata.name} (network, gateway or broadcast)`
          : held
            ? `address ${f.address} is already allocated in IPAMBlock ${block.metadata.name} to handle ${held.handle}`
            : undefined;
    if (why) {
      quarantine.push({ file: f.file, why });
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
        namespace: pod!.metadata.namespace ?? '',
        pod: pod!.metadata.name,
        ...(pod!.metadata.uid ? { podUID: pod!.metadata.uid } : {}),
        node: input.node,
      },
    });
  }
  imports.sort((a, b) => a.block.localeCompare(b.block) || a.ordinal - b.ordinal);
  return { imports, done, quarantine };
}
