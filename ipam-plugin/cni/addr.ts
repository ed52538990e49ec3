/**
 * The little address handling the protocol layer needs: parse an IP or CIDR, mask a route
 * destination to its canonical network address (ptp rejects host bits), and
 * tell families apart. Allocation arithmetic lives in core; this stays dependency-free so the
 * protocol layer loads fast.
 */
import { isIPv4, isIPv6 } from 'node:net';

export type Family = 4 | 6;

export interface ParsedIp {
  readonly family: Family;
  /** The address as an unsigned integer (32 or 128 bits). */
  readonly value: bigint;
}

export interface ParsedCidr extends ParsedIp {
  /** Prefix length in bits. */
  readonly prefixLength: number;
}

const bits = (f: Family): number => (f === 4 ? 32 : 128);

/** Parses a plain IPv4 or IPv6 address (no prefix); undefined when it is not one. */
export function parseIp(text: string): ParsedIp | undefined {
  if (isIPv4(text)) {
    return { family: 4, value: text.split('.').reduce((acc, o) => (acc << 8n) | BigInt(Number(o)), 0n) };
  }
  if (!isIPv6(text) || text.includes('%')) return undefined;
  let s = text;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (v4) {
    const n = parseIp(v4[1] as string)?.value ?? 0n;
    s = s.slice(0, -(v4[1] as string).length) + `${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
  }
  const [head = '', tail] = s.split('::');
  const h = head === '' ? [] : head.split(':');
  const t = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return { family: 6, value: groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n) };
}

/** Parses `ip/prefix`; undefined when malformed or the prefix is out of range for the family. */
export function parseCidr(text: string): ParsedCidr | undefined {
  const slash = text.indexOf('/');
  if (slash < 0) return undefined;
  const ip = parseIp(text.slice(0, slash));
  const p = text.slice(slash + 1);
  if (!ip || !/^\d{1,3}$/.test(p)) return undefined;
  const prefixLength = Number(p);
  return prefixLength <= bits(ip.family) ? { ...ip, prefixLength } : undefined;
}

/** Parses an IP that may carry a prefix (`IP=10.1.0.7/24`); the prefix is dropped. */
export function parseIpMaybeCidr(text: string): ParsedIp | undefined {
  const c = parseCidr(text);
  if (c) return { family: c.family, value: c.value };
  return parseIp(text);
}

/** Formats an address canonically (IPv6 in RFC 5952 form). */
export function formatIp(ip: ParsedIp): string {
  if (ip.family === 4) {
    return [24n, 16n, 8n, 0n].map((s) => String((ip.value >> s) & 0xffn)).join('.');
  }
  const g = Array.from({ length: 8 }, (_, i) => Number((ip.value >> BigInt(112 - 16 * i)) & 0xffffn));
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen) [best, bestLen] = [i, j - i];
    i = j === i ? i + 1 : j;
  }
  const hex = g.map((x) => x.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}

/** The network address of a CIDR (host bits cleared). */
export function maskCidr(c: ParsedCidr): ParsedCidr {
  const host = bits(c.family) - c.prefixLength;
  return { ...c, value: (c.value >> BigInt(host)) << BigInt(host) };
}

export function formatCidr(c: ParsedCidr): string {
  return `${formatIp(c)}/${c.prefixLength}`;
}

/** True when `ip` lies inside `net`. */
export function cidrContains(net: ParsedCidr, ip: ParsedIp): boolean {
  if (net.family !== ip.family) return false;
  const host = BigInt(bits(net.family) - net.prefixLength);
  return net.value >> host === ip.value >> host;
}
