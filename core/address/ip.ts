/**
 * IPv4 / IPv6 addresses and CIDRs as BigInt values. The only module that uses ipaddr.js (for
 * parsing and formatting); everything else is BigInt arithmetic, exact at any offset of any
 * prefix length (an IPv6 /64 pool has 2^58 /122 blocks — no number ever loses precision).
 */
import ipaddr from 'ipaddr.js';

export type IPFamily = 4 | 6;

/** An address: family + its value as an unsigned integer (0 ≤ value < 2^32 or 2^128). */
export interface IP {
  readonly family: IPFamily;
  readonly value: bigint;
}

/** A CIDR: `base` is the network address (always masked), `prefixLength` in bits. */
export interface Cidr {
  readonly family: IPFamily;
  readonly base: bigint;
  readonly prefixLength: number;
}

/** Address width in bits: 32 or 128. */
export function bitsOf(family: IPFamily): number {
  return family === 4 ? 32 : 128;
}

/**
 * Parses an address — the one parser of blockipam (core, plugin, ipamctl, daemons). IPv4 only in
 * four-part decimal ("10.0.0.1", not "10.1" or "012.0.0.1"); IPv6 in the RFC 4291 hex forms
 * (any case, zero runs compressed or not) without a zone ("%eth0") and without an embedded
 * IPv4 part ("::ffff:10.1.2.3", "::1.2.3.4": refused — those spell an IPv4 address as IPv6, and
 * two parsers disagreed on what "::1.2.3.4" is). Agrees with node:net's isIP on every other
 * text (test/core/address-property.test.ts).
 * @returns undefined when `text` is not an address (expected outcome for user input)
 */
export function parseIP(text: string): IP | undefined {
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) {
    return { family: 4, value: bytesToBigInt(ipaddr.IPv4.parse(text).toByteArray()) };
  }
  if (!text.includes(':') || text.includes('%') || text.includes('.') || !ipaddr.IPv6.isValid(text))
    return undefined;
  return { family: 6, value: bytesToBigInt(ipaddr.IPv6.parse(text).toByteArray()) };
}

/**
 * Parses "address/prefixLength".
 * @param options.strict when true (default) the address must equal its network address
 *   ("10.0.0.1/24" is refused); when false the host bits are cleared.
 * @returns undefined for bad syntax, a prefix out of range, or (strict) host bits set
 */
export function parseCidr(text: string, options: { strict?: boolean } = {}): Cidr | undefined {
  const read = readCidr(text, options.strict ?? true);
  return 'problem' in read ? undefined : read;
}

/**
 * Why {@link parseCidr} refuses `text`, for the person who typed it (same options), e.g.
 * `10.300.0.0 is not a valid IPv4 address (four numbers from 0 to 255, …)`, `the prefix length "33"
 * is not a whole number from 0 to 32`, `host bits are set: the network is 10.0.0.0/24`.
 * @returns undefined when parseCidr accepts `text`
 */
export function cidrProblem(text: string, options: { strict?: boolean } = {}): string | undefined {
  const read = readCidr(text, options.strict ?? true);
  return 'problem' in read ? read.problem() : undefined;
}

/** parseCidr's rules, once: the CIDR, or the problem (a thunk: words only when asked for). */
function readCidr(text: string, strict: boolean): Cidr | { problem: () => string } {
  const slash = text.indexOf('/');
  if (slash < 0) return { problem: () => 'no "/" and prefix length (e.g. 10.244.0.0/16)' };
  const addressText = text.slice(0, slash);
  const ip = parseIP(addressText);
  if (!ip) return { problem: () => notAnAddress(addressText) };
  const prefixText = text.slice(slash + 1);
  const bits = bitsOf(ip.family);
  if (!/^(0|[1-9][0-9]{0,2})$/.test(prefixText) || Number(prefixText) > bits)
    return {
      problem: () =>
        `the prefix length ${JSON.stringify(prefixText)} is not a whole number from 0 to ${bits} (IPv${ip.family})`,
    };
  const prefixLength = Number(prefixText);
  const base = maskValue(ip.value, ip.family, prefixLength);
  const cidr = { family: ip.family, base, prefixLength };
  if (strict && base !== ip.value)
    return { problem: () => `host bits are set: the network is ${formatCidr(cidr)}` };
  return cidr;
}

/** Why {@link parseIP} refuses `text`, naming the family it looks like. */
function notAnAddress(text: string): string {
  if (text.includes(':')) return `${text} is not a valid IPv6 address`;
  if (text.includes('.'))
    return `${text} is not a valid IPv4 address (four numbers from 0 to 255, without leading zeros)`;
  return `${JSON.stringify(text)} is not an IP address`;
}

/** Like {@link parseCidr} (strict) but throws; for CIDRs that were validated at the edge. */
export function mustParseCidr(text: string): Cidr {
  const cidr = parseCidr(text);
  if (!cidr) throw new TypeError(`not a masked CIDR: ${JSON.stringify(text)}`);
  return cidr;
}

/** Canonical text: dotted decimal, or RFC 5952 lower-case IPv6 ("fd00::1"). */
export function formatIP(ip: IP): string {
  if (ip.family === 4) {
    // one Number instead of four BigInt shifts: ipamctl check formats every allocation's address
    const n = Number(ip.value);
    return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
  }
  return new ipaddr.IPv6(bigIntToBytes(ip.value, 16)).toRFC5952String();
}

/** Canonical "base/prefixLength". */
export function formatCidr(cidr: Cidr): string {
  return `${formatIP({ family: cidr.family, value: cidr.base })}/${cidr.prefixLength}`;
}

/** Clears the host bits of `value` for a prefix of `prefixLength` bits. */
export function maskValue(value: bigint, family: IPFamily, prefixLength: number): bigint {
  const hostBits = BigInt(bitsOf(family) - prefixLength);
  return (value >> hostBits) << hostBits;
}

/** Number of addresses in the CIDR (2^(bits − prefixLength)). */
export function cidrSize(cidr: Cidr): bigint {
  return 1n << BigInt(bitsOf(cidr.family) - cidr.prefixLength);
}

/** Last address of the CIDR (inclusive). */
export function cidrLast(cidr: Cidr): bigint {
  return cidr.base + cidrSize(cidr) - 1n;
}

/** True when `ip` lies inside `cidr` (same family). */
export function cidrContains(cidr: Cidr, ip: IP): boolean {
  return ip.family === cidr.family && ip.value >= cidr.base && ip.value <= cidrLast(cidr);
}

/** True when the two CIDRs share at least one address (same family). */
export function cidrsOverlap(a: Cidr, b: Cidr): boolean {
  return a.family === b.family && a.base <= cidrLast(b) && b.base <= cidrLast(a);
}

/** True when `inner` lies wholly inside `outer`. */
export function cidrCovers(outer: Cidr, inner: Cidr): boolean {
  return (
    outer.family === inner.family &&
    outer.prefixLength <= inner.prefixLength &&
    inner.base >= outer.base &&
    cidrLast(inner) <= cidrLast(outer)
  );
}

function bytesToBigInt(bytes: readonly number[]): bigint {
  let value = 0n;
  for (const byte of bytes) value = (value << 8n) | BigInt(byte);
  return value;
}

function bigIntToBytes(value: bigint, length: number): number[] {
  const bytes = new Array<number>(length);
  for (let i = length - 1; i >= 0; i--) {
    bytes[i] = Number(value & 0xffn);
    value >>= 8n;
  }
  return bytes;
}
