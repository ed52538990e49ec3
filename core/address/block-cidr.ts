/**
 * Blocks as address ranges: naming from the CIDR, ordinal ↔ address, reserved ordinals, and the
 * block sizes each family allows.
 */
import { bitsOf, cidrContains, cidrSize, formatCidr, formatIP, parseCidr } from './ip.ts';
import type { Cidr, IP, IPFamily } from './ip.ts';

/**
 * Allowed block prefix lengths. The block must hold its reserved ordinals plus ≥ 1 pod, and ptp
 * cannot use a /32 or /128 (ptp needs a gateway in the prefix), hence v4 /20–/30, v6 /116–/126.
 * The upper bound on block size (/20, /116: 4096 addresses) keeps a block object small.
 */
export const BLOCK_SIZE_RANGE: Readonly<Record<IPFamily, { min: number; max: number }>> = {
  4: { min: 20, max: 30 },
  6: { min: 116, max: 126 },
};

/** Default block prefix length when a pool leaves `blockSize` out (docs/design-core.md §1). */
export const DEFAULT_BLOCK_SIZE: Readonly<Record<IPFamily, number>> = { 4: 26, 6: 122 };

/**
 * The IPAMBlock object name for a block CIDR: the canonical CIDR text with '.', ':' and '/'
 * replaced by '-' (Calico's scheme): 10.244.3.64/26 → "10-244-3-64-26", fd00::40/122 →
 * "fd00--40-122". Bijective (see {@link cidrFromBlockName}).
 */
export function blockNameOf(cidr: Cidr): string {
  return formatCidr(cidr).replace(/[.:/]/g, '-');
}

/**
 * Inverse of {@link blockNameOf}.
 * @returns undefined when `name` is not the name of a masked CIDR
 */
export function cidrFromBlockName(name: string): Cidr | undefined {
  const cut = name.lastIndexOf('-');
  if (cut < 0) return undefined;
  const head = name.slice(0, cut);
  const address = /^[0-9]+(-[0-9]+){3}$/.test(head) ? head.replace(/-/g, '.') : head.replace(/-/g, ':');
  const cidr = parseCidr(`${address}/${name.slice(cut + 1)}`);
  return cidr && blockNameOf(cidr) === name ? cidr : undefined;
}

/** Number of ordinals in a block (2^(bits − prefix)); blocks are at most /20, so a number. */
export function blockOrdinals(block: Cidr): number {
  return Number(cidrSize(block));
}

/** The address at `ordinal` (0-based offset from the block's base). No range check. */
function addressAt(block: Cidr, ordinal: number): IP {
  return { family: block.family, value: block.base + BigInt(ordinal) };
}

/** Text of the address at `ordinal`. */
export function addressTextAt(block: Cidr, ordinal: number): string {
  return formatIP(addressAt(block, ordinal));
}

/**
 * The ordinal of `ip` in `block`.
 * @returns undefined when the address is outside the block
 */
export function ordinalOf(block: Cidr, ip: IP): number | undefined {
  return cidrContains(block, ip) ? Number(ip.value - block.base) : undefined;
}

/**
 * Ordinals never handed out, sorted: 0 = network address (IPv6: subnet-router
 * anycast, RFC 4291 §2.6.1), 1 = the gateway ptp puts on the host side, and for IPv4 the last
 * ordinal (broadcast: the pod sees the block prefix).
 */
export function reservedOrdinals(block: Cidr): readonly number[] {
  const size = blockOrdinals(block);
  return block.family === 4 ? [0, 1, size - 1] : [0, 1];
}

/**
 * The one capacity arithmetic of blockipam: addresses a block of this CIDR can hand out — its
 * ordinals less the reserved ones ({@link reservedOrdinals}): 61 for a /26, 1 for a /30, 62 for
 * a /122. Pool capacity (poolUtilization), a block's (capacityOf), ipamctl show and the plugin's
 * STATUS all derive from it.
 */
export function blockCapacity(block: Cidr): number {
  return blockOrdinals(block) - reservedOrdinals(block).length;
}

/** The gateway address of a block (ordinal 1). */
export function gatewayOf(block: Cidr): IP {
  return addressAt(block, 1);
}

/** The block CIDR (prefix `blockSize`) that contains `ip`. */
export function blockCidrFor(ip: IP, blockSize: number): Cidr {
  const hostBits = BigInt(bitsOf(ip.family) - blockSize);
  return { family: ip.family, base: (ip.value >> hostBits) << hostBits, prefixLength: blockSize };
}

/** True when `blockSize` is allowed for `family`. */
export function isAllowedBlockSize(family: IPFamily, blockSize: number): boolean {
  const range = BLOCK_SIZE_RANGE[family];
  return Number.isInteger(blockSize) && blockSize >= range.min && blockSize <= range.max;
}
