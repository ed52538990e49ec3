/**
 * Reading a `prevResult` (DEL and CHECK, conformance case 28): the addresses it names, in any
 * version, and a shape check (CHECK only: DEL stays best effort), per the result's own
 * `cniVersion` (else the request's shape rules for ≥ 0.3.0): 0.1.0/0.2.0 `ip4`/`ip6` objects with
 * an `ip` string; later versions `ips` an array of objects with an `address` string, and
 * `routes`/`interfaces` arrays, `dns` an object when present.
 */
import { parseCidr } from '../address/ip.ts';
import { compareVersions, isSupportedVersion } from './versions.ts';

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** @returns `.field: problem` for the first malformed field (to append to "prevResult"), or undefined */
export function prevResultProblem(prev: Readonly<Record<string, unknown>>): string | undefined {
  const v = prev.cniVersion;
  if (v !== undefined && typeof v !== 'string') return '.cniVersion: must be string';
  const legacy = isSupportedVersion(v) && compareVersions(v, '0.3.0') < 0;
  if (legacy) {
    for (const k of ['ip4', 'ip6']) {
      const ip = prev[k];
      if (ip === undefined) continue;
      if (!isObject(ip)) return `.${k}: must be object`;
      if (typeof ip.ip !== 'string') return `.${k}.ip: must be string`;
      if (ip.routes !== undefined && !Array.isArray(ip.routes)) return `.${k}.routes: must be array`;
    }
  } else {
    if (prev.ips !== undefined) {
      if (!Array.isArray(prev.ips)) return '.ips: must be array';
      for (const [n, ip] of (prev.ips as unknown[]).entries()) {
        if (!isObject(ip)) return `.ips[${n}]: must be object`;
        if (typeof ip.address !== 'string') return `.ips[${n}].address: must be string`;
      }
    }
    for (const k of ['routes', 'interfaces']) {
      const a = prev[k];
      if (a === undefined) continue;
      if (!Array.isArray(a)) return `.${k}: must be array`;
      for (const [n, e] of (a as unknown[]).entries()) if (!isObject(e)) return `.${k}[${n}]: must be object`;
    }
  }
  if (prev.dns !== undefined && !isObject(prev.dns)) return '.dns: must be object';
  return undefined;
}

/**
 * Plain IP addresses named by a prevResult of any version (`ips[].address` or
 * `ip4.ip` / `ip6.ip`). Entries that are not CIDR strings are skipped: a DEL must not fail
 * on a prevResult it cannot read (SPEC: DEL is best effort).
 */
export function prevResultAddresses(prev: Readonly<Record<string, unknown>> | undefined): string[] {
  if (!prev) return [];
  const out: string[] = [];
  const take = (v: unknown): void => {
    if (typeof v === 'string' && parseCidr(v, { strict: false })) out.push(v.split('/')[0] as string);
  };
  if (Array.isArray(prev.ips)) {
    for (const ip of prev.ips as unknown[]) take((ip as { address?: unknown } | null)?.address);
  }
  for (const k of ['ip4', 'ip6']) take((prev[k] as { ip?: unknown } | undefined)?.ip);
  return out;
}
