/**
 * ADD (SPEC §2; docs/design-plugin.md §Invariants): allocate per (containerID, ifname) and
 * print exactly one result in the request's cniVersion. A second ADD of a live attachment fails
 * (code 100) and leaves the first allocation untouched, so ptp's cleanup cannot free it.
 */
import { parseCidr } from '../../address/ip.ts';
import type { AddCall, AddOutcome, IpConfig, PodCall } from '../../node-ipam/service-types.ts';
import { parseCniArgs, type CniArgs } from '../args.ts';
import { attachmentOf, type CommandContext, type CommandResult } from './context.ts';
import { CniCode, CniError } from '../errors.ts';
import { heldByOthers, readStore, reserveInStore } from '../host-local-store.ts';
import { staticList } from '../netconf.ts';
import { formatResult } from '../result.ts';

/** Pod identity from CNI_ARGS; undefined unless both namespace and name are given. */
function podOf(args: CniArgs): PodCall | undefined {
  if (args.podNamespace === undefined || args.podName === undefined) return undefined;
  return {
    namespace: args.podNamespace,
    name: args.podName,
    ...(args.podUID !== undefined ? { uid: args.podUID } : {}),
  };
}

/**
 * An allocation's `handle` is at most 512 characters (crds/ipamblocks.yaml). With the network
 * name at most 256 and CNI_IFNAME 15, only CNI_CONTAINERID can make it longer: refused here
 * (code 4) instead of coming back as the API server's 422 naming the block.
 */
const MAX_HANDLE = 512;

export async function add(ctx: CommandContext): Promise<CommandResult> {
  // The handle's length, `<network>.<containerID>.<ifname>` (core's handleOf, not loaded here:
  // the agent path's start-up evaluates no allocator module).
  const handleLength = ctx.conf.name.length + ctx.env.containerID.length + ctx.env.ifname.length + 2;
  if (handleLength > MAX_HANDLE)
    throw new CniError(
      CniCode.invalidEnv,
      'CNI_CONTAINERID too long',
      `CNI_CONTAINERID is ${ctx.env.containerID.length} characters: the allocation handle <network>.<containerID>.<ifname> would be ${handleLength}, at most ${MAX_HANDLE}`,
    );
  const args = parseCniArgs(ctx.env.args);
  const fromArgs = ctx.conf.configIPs.length > 0 ? undefined : staticList(args.ips, 'CNI_ARGS IP');
  const staticIPs = fromArgs ?? ctx.conf.configIPs;
  const pod = podOf(args);
  const ipam = await ctx.ipam();
  const call: AddCall = {
    attachment: attachmentOf(ctx),
    ...(pod ? { pod } : {}),
    node: ctx.conf.nodeName,
    families: ctx.conf.families,
    pools: ctx.conf.pools,
    staticIPs,
    // A refused static address comes back naming `staticIPsFrom` (the pod annotation: its own name).
    ...(staticIPs.length > 0 ? { staticIPsFrom: ctx.conf.configIPsFrom ?? 'CNI_ARGS IP' } : {}),
    ...(ctx.conf.podAnnotations ? { podAnnotations: ctx.conf.podAnnotations } : {}),
  };
  const store = ctx.conf.hostLocalStore;
  const outcome = store === undefined ? await ipam.add(call) : await addBesideHostLocal(ctx, call, store);
  const ips = allocatedOrThrow(outcome);
  if (outcome.kind === 'allocated' && outcome.podNotFound && pod)
    ctx.log.log('warn', 'pod not found: allocation recorded without a pod reference', {
      pod: `${pod.namespace}/${pod.name}`,
    });
  ctx.log.log('info', 'allocated', { ips: ips.map((i) => i.address) });
  const familyOf = (cidr: string): number | undefined => parseCidr(cidr, { strict: false })?.family;
  const families = new Set(ips.map((i) => familyOf(i.address)));
  const routes = ctx.conf.routes.filter((r) => families.has(familyOf(r.dst)));
  return formatResult({ ips, routes, ...(ctx.conf.dns ? { dns: ctx.conf.dns } : {}) }, ctx.conf.cniVersion);
}

// 3 rounds: each lost round means a host-local ADD under the old conflist took the address between
// this ADD's read of the store and its reservation — a few per node during an adoption, at most.
const HOST_LOCAL_ROUNDS = 3;

/**
 * ADD while the node is adopted from host-local (host-local-store.ts): no address a store file
 * holds for another container, and each address handed out reserved in the store. A reservation
 * lost to host-local releases this call's allocation and tries again with the store re-read.
 * @throws CniError 11 after {@link HOST_LOCAL_ROUNDS} lost rounds; 102 (addressRefused) for a
 *   static address another container holds in the store; the fs error of an unusable store (the
 *   allocation released first)
 */
async function addBesideHostLocal(ctx: CommandContext, call: AddCall, store: string): Promise<AddOutcome> {
  const ipam = await ctx.ipam();
  const { containerID, ifname } = ctx.env;
  for (let round = 1; ; round++) {
    const excludedIPs = heldByOthers(await readStore(store), containerID, ifname);
    const outcome = await ipam.add({ ...call, ...(excludedIPs.length > 0 ? { excludedIPs } : {}) });
    if (outcome.kind !== 'allocated') return outcome;
    const addresses = outcome.ips.map((ip) => ip.address.split('/')[0] ?? '');
    let clashes: string[];
    try {
      clashes = await reserveInStore(store, addresses, containerID, ifname);
    } catch (error) {
      await ipam.del({ attachment: call.attachment, node: call.node });
      throw error;
    }
    if (clashes.length === 0) return outcome;
    await ipam.del({ attachment: call.attachment, node: call.node });
    ctx.log.log('warn', 'host-local holds the address meanwhile; trying again', { ips: clashes, round });
    if (call.staticIPs.length > 0)
      throw new CniError(
        CniCode.addressRefused,
        'requested address refused',
        `${clashes.join(', ')} held in host-local's store ${store} by another container`,
      );
    if (round >= HOST_LOCAL_ROUNDS)
      throw new CniError(
        CniCode.tryAgainLater,
        'host-local keeps taking the addresses',
        `${clashes.join(', ')} taken in host-local's store ${store} ${round} times in a row`,
      );
  }
}

/** Maps a non-allocation outcome to its CNI error. */
function allocatedOrThrow(o: AddOutcome): readonly IpConfig[] {
  switch (o.kind) {
    case 'allocated':
      return o.ips;
    case 'duplicate':
      throw new CniError(
        CniCode.duplicateAllocation,
        'duplicate allocation is not allowed',
        `${o.message}; DEL it first (the existing allocation is unchanged)`,
      );
    case 'exhausted':
      throw new CniError(CniCode.exhausted, 'no free address', o.message);
    case 'addressRefused':
      throw new CniError(CniCode.addressRefused, 'requested address refused', o.message);
    case 'rejected':
      throw new CniError(CniCode.requestRejected, 'invalid address request', o.message);
    case 'misconfigured':
      throw new CniError(CniCode.invalidConfig, 'node name mismatch', o.message);
  }
}
