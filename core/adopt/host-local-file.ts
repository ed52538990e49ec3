/**
 * One file of host-local's store (pure; loads only core's address module, so the CNI layer reads
 * the store without the allocator). host-local keeps one file per address in
 * `<dataDir>/<network>/`, named by the address, holding `<containerID>\r\n<ifname>` — or the
 * container ID alone, as host-local wrote before v0.8 — besides `lock` and `last_reserved_ip.N`.
 */
import { formatIP, parseIP } from '../address/ip.ts';

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
