/**
 * Address lookup shared by `show --ip` and `release --ip`: which blocks contain an address and who
 * holds it there. Cost: 1 metadata LIST of blocks (names carry the CIDR) + 1 GET per containing
 * block (normally one; more only when blocks overlap).
 */
import {
  cidrContains,
  cidrFromBlockName,
  formatIP,
  mustParseCidr,
  ordinalOf,
  parseIP,
  reservedOrdinals,
} from 'blockipam/core';
import type { Allocation, Datastore, IP, IPAMBlock } from 'blockipam/core';
import { CliError } from './io.ts';

/** One holder of the address. */
interface Holder {
  block: IPAMBlock;
  ordinal: number;
  allocation: Allocation;
}

/** What is known about one address. */
export interface AddressInfo {
  /** Canonical text. */
  address: string;
  /** Blocks whose CIDR contains it. */
  blocks: IPAMBlock[];
  /** Allocations of it (more than one only when blocks overlap: a duplicate). */
  holders: Holder[];
  /** Names of blocks where it is a reserved ordinal (network, gateway, broadcast). */
  reservedIn: string[];
}

/** Parses a user-given address. @throws CliError naming it */
export function parseAddress(text: string): IP {
  const ip = parseIP(text);
  if (!ip) throw new CliError(`${JSON.stringify(text)} is not an IP address`);
  return ip;
}

/** Looks `ip` up. */
export async function lookupAddress(ds: Datastore, ip: IP): Promise<AddressInfo> {
  const names = (await ds.blocks.listMetadata())
    .map((m) => m.name)
    .filter((name) => {
      const cidr = cidrFromBlockName(name);
      return cidr !== undefined && cidrContains(cidr, ip);
    });
  const blocks = (await Promise.all(names.map((name) => ds.blocks.get(name)))).filter((b) => b !== undefined);
  const holders: Holder[] = [];
  const reservedIn: string[] = [];
  for (const block of blocks) {
    const ordinal = ordinalOf(mustParseCidr(block.spec.cidr), ip);
    if (ordinal === undefined) continue;
    const allocation = block.spec.allocations[String(ordinal)];
    if (allocation) holders.push({ block, ordinal, allocation });
    if (reservedOrdinals(mustParseCidr(block.spec.cidr)).includes(ordinal))
      reservedIn.push(block.metadata.name);
  }
  return { address: formatIP(ip), blocks, holders, reservedIn };
}
