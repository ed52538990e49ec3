/**
 * ADD (SPEC §2; docs/design-plugin.md §Invariants): allocate per (containerID, ifname) and
 * print exactly one result in the request's cniVersion. A second ADD of a live attachment fails
 * (code 100) and leaves the first allocation untouched, so ptp's cleanup cannot free it.
 */
import { parseCidr } from 'blockipam/core/address';
import { handleOf, type PodRef } from 'blockipam/core';
import type { AddOutcome } from '../backend/port.ts';
import { parseCniArgs, type CniArgs } from '../cni/args.ts';
import { attachmentOf, underLock, type CommandContext, type CommandResult } from './context.ts';
import { CniCode, CniError } from '../cni/errors.ts';
import { staticList } from '../cni/netconf.ts';
import { formatResult, type IpConfig } from '../cni/result.ts';

/** Pod identity from CNI_ARGS; undefined unless both namespace and name are given. */
export function podOf(args: CniArgs): PodRef | undefined {
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
export const MAX_HANDLE = 512;

export async function add(ctx: CommandContext): Promise<CommandResult> {
  const handle = handleOf(ctx.conf.name, ctx.env.containerID, ctx.env.ifname);
  if (handle.length > MAX_HANDLE)
    throw new CniError(
      CniCode.invalidEnv,
      'CNI_CONTAINERID too long',
      `CNI_CONTAINERID is ${ctx.env.containerID.length} characters: the allocation handle <network>.<containerID>.<ifname> would be ${handle.length}, at most ${MAX_HANDLE}`,
    );
  const args = parseCniArgs(ctx.env.args);
  const staticIPs =
    ctx.conf.configIPs.length > 0 ? ctx.conf.configIPs : (staticList(args.ips, 'CNI_ARGS IP') ?? []);
  const pod = podOf(args);
  const backend = await ctx.backend();
  const outcome = await backend.add({
    attachment: attachmentOf(ctx),
    ...(pod ? { pod } : {}),
    node: ctx.conf.nodeName,
    families: ctx.conf.families,
    pools: ctx.conf.pools,
    staticIPs,
    critical: (step, beforeWait) => underLock(ctx, step, beforeWait ? { beforeWait } : {}),
    lockFree: () => ctx.lockFree(),
  });
  // A refused static address: say which field asked for it (the pod annotation: core-backend.ts).
  const from = ctx.conf.configIPsFrom ?? 'CNI_ARGS IP';
  const ips = allocatedOrThrow(
    outcome.kind === 'addressRefused' && staticIPs.length > 0
      ? { ...outcome, message: `${from}: ${outcome.message}` }
      : outcome,
  );
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
