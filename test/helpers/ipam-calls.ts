/**
 * Node IPAM service calls for tests of one node (core's protocol types,
 * docs/design-core.md §Node IPAM service): an attachment per container ID on interface eth0,
 * and an auto-assigning ADD of it, with no pool lists and no static IPs.
 */
import type { AddCall, AttachmentRef, IpFamilyNumber } from 'blockipam/core/node-ipam';

/**
 * @param node the node every call names
 * @param network the CNI network name of every attachment; default `net`
 * @returns `attachment(containerID)` and `addCall(containerID, families = [4])`
 */
export function ipamCalls(
  node: string,
  network = 'net',
): {
  attachment: (containerID: string) => AttachmentRef;
  addCall: (containerID: string, families?: readonly IpFamilyNumber[]) => AddCall;
} {
  const attachment = (containerID: string): AttachmentRef => ({ network, containerID, ifname: 'eth0' });
  return {
    attachment,
    addCall: (containerID, families = [4]) => ({
      attachment: attachment(containerID),
      node,
      families,
      pools: { 4: [], 6: [] },
      staticIPs: [],
    }),
  };
}
