/**
 * Shapes the IPAM result for the request's cniVersion (SPEC §5; docs/design-plugin.md §Invariants, 2): the result's
 * `cniVersion` always equals the request's (§3.4), and an IPAM result carries no `interfaces`
 * and no `ips[].interface` (§3.2). Reading a `prevResult` back is prev-result.ts's job.
 */
import { parseCidr, type IPFamily } from '../address/ip.ts';
import type { Dns, Route } from './netconf.ts';
import { compareVersions, type CniVersion } from './versions.ts';

/** One allocated address: `address` in CIDR form with the block prefix, gateway inside it. */
interface IpConfig {
  readonly address: string;
  readonly gateway: string;
}

/** The version-neutral outcome of an ADD. At most one address per family. */
export interface IpamResult {
  readonly ips: readonly IpConfig[];
  readonly routes: readonly Route[];
  readonly dns?: Dns;
}

const routeExtras = ['mtu', 'advmss', 'priority', 'table', 'scope'] as const;

function family(address: string): IPFamily {
  return parseCidr(address, { strict: false })?.family ?? 4;
}

/** Routes for `version`: 1.1.0 keeps mtu/advmss/priority/table/scope, older versions drop them. */
function shapeRoutes(routes: readonly Route[], version: CniVersion): Route[] {
  if (version === '1.1.0') return routes.map((r) => ({ ...r }));
  return routes.map((r) => {
    const out: Record<string, unknown> = { ...r };
    for (const k of routeExtras) delete out[k];
    return out as unknown as Route;
  });
}

function withDns(doc: Record<string, unknown>, dns: Dns | undefined): Record<string, unknown> {
  return dns === undefined ? doc : { ...doc, dns };
}

/**
 * Formats `r` as the result document for `version`:
 * - 0.1.0 / 0.2.0: `ip4` / `ip6` objects, each with the routes of its family nested;
 * - 0.3.0 / 0.3.1 / 0.4.0: `ips[]` with `version` "4" | "6", top-level `routes`;
 * - 1.0.0 / 1.1.0: `ips[]` without `version`.
 * Precondition: at most one address per family (netconf and the backend guarantee it).
 */
export function formatResult(r: IpamResult, version: CniVersion): Record<string, unknown> {
  const routes = shapeRoutes(r.routes, version);
  if (compareVersions(version, '0.3.0') < 0) {
    const doc: Record<string, unknown> = { cniVersion: version };
    for (const ip of r.ips) {
      const f = family(ip.address);
      const own = routes
        .filter((rt) => parseCidr(rt.dst, { strict: false })?.family === f)
        .map((rt) => ({ dst: rt.dst, ...(rt.gw ? { gw: rt.gw } : {}) }));
      doc[`ip${f}`] = { ip: ip.address, gateway: ip.gateway, ...(own.length > 0 ? { routes: own } : {}) };
    }
    return withDns(doc, r.dns);
  }
  const withVersion = compareVersions(version, '1.0.0') < 0;
  const ips = r.ips.map((ip) => ({
    ...(withVersion ? { version: String(family(ip.address)) } : {}),
    address: ip.address,
    gateway: ip.gateway,
  }));
  return withDns({ cniVersion: version, ips, routes }, r.dns);
}
