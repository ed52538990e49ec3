/**
 * Decodes and validates the stdin network configuration, once, at the edge:
 * JSON → version negotiation → the ahead-of-time compiled schema → a `Readonly` domain value.
 */
import { hostname } from 'node:os';
import { formatCidr, parseCidr, parseIP, type IP, type IPFamily } from '../address/ip.ts';
import type { Attachment } from '../allocator/gc.ts';
import { agentSocketPath, MAX_AGENT_SOCKET_BYTES } from '../node-ipam/wire.ts';
import { CniCode, CniError } from './errors.ts';
import { DEFAULT_TIMEOUT_MS } from './forward.ts';
import * as generated from './netconf-validate.generated.ts';
import { implicitVersion, requireSupported, type CniVersion } from './versions.ts';

/** A network name: the Go skel's rule (SPEC §1), as a JSON-schema pattern (netconf-schema.ts). */
export const NETWORK_NAME_PATTERN = '^[a-zA-Z0-9][a-zA-Z0-9_.\\-]*$';

/** The longest network name (`name`) a netconf may carry: an allocation's `network` (crds/ipamblocks.yaml). */
const MAX_NETWORK_NAME = 256;

/** A route as the result carries it; 1.1.0 fields are dropped for older versions. */
export interface Route {
  readonly dst: string;
  readonly gw?: string;
  readonly mtu?: number;
  readonly advmss?: number;
  readonly priority?: number;
  readonly table?: number;
  readonly scope?: number;
}

export interface Dns {
  readonly nameservers?: readonly string[];
  readonly domain?: string;
  readonly search?: readonly string[];
  readonly options?: readonly string[];
}

/** The validated, defaulted configuration of one invocation. */
export interface NetConf {
  readonly cniVersion: CniVersion;
  /** Network name: the handle prefix (`<name>.<containerID>.<ifname>`). */
  readonly name: string;
  /** Kubeconfig path. Default `/etc/cni/net.d/blockipam-kubeconfig`. */
  readonly kubeconfig: string;
  /** Node name: `ipam.nodeName`, else the host name in lower case (kubelet's default). */
  readonly nodeName: string;
  readonly logFile?: string;
  /** Default `info` (file); stderr always gets `warn` and above. */
  readonly logLevel: 'error' | 'warn' | 'info' | 'debug';
  /** Families to auto-assign. Default IPv4 only. */
  readonly families: readonly IPFamily[];
  readonly pools: { readonly 4: readonly string[]; readonly 6: readonly string[] };
  /**
   * Canonical routes. Default: `0.0.0.0/0` and `::/0`; ADD keeps only the routes of the families
   * its result holds (a static IPv6 address gets `::/0` even when assignIPv6 is false).
   */
  readonly routes: readonly Route[];
  readonly dns?: Dns;
  /** ADD/DEL/GC budget once the host lock is held. Default 30 000 ms. */
  readonly timeoutMs: number;
  /** How long to wait for the host lock. Default 60 000 ms. */
  readonly lockTimeoutMs: number;
  /** The directory of the host lock's default file. Default `/var/lib/cni/blockipam`. */
  readonly cacheDir: string;
  /**
   * The host lock's file (flock(2), docs/design-plugin.md §Host lock). Default
   * `<cacheDir>/ipam.lock`: every blockipam network of a host with the default cacheDir shares it.
   */
  readonly lockFile: string;
  /**
   * The node agent's IPAM socket (absolute path, written into the conflist by the agent).
   * Absent: no agent, every call takes the direct path (docs/design-plugin.md §Forwarder).
   */
  readonly agentSocket?: string;
  /**
   * `agent` (the default when `agentSocket` is set): each call goes to the agent, and takes the
   * direct path only when connect() to its socket fails; `standalone` (the default without
   * `agentSocket`): the direct path always, the socket is never tried.
   */
  readonly mode: 'agent' | 'standalone';
  /**
   * host-local's store directory (`<dataDir>/<network>`, absolute) while the node is being adopted
   * from host-local (docs/design-adopt.md): an ADD takes no address a file there holds for another
   * container and reserves each address it hands out with a file of its own; a DEL removes the
   * container's files. Absent (the default; once adoption is switched off): the store is not read.
   */
  readonly hostLocalStore?: string;
  /** Static IPs from the config: `runtimeConfig.ips`, else `args.cni.ips` (plain addresses). */
  readonly configIPs: readonly string[];
  /** The field `configIPs` came from, when it is not empty (for a message refusing one). */
  readonly configIPsFrom?: 'runtimeConfig.ips' | 'args.cni.ips';
  /**
   * The pod's annotations from the runtime: `runtimeConfig["io.kubernetes.cri.pod-annotations"]`
   * (containerd offers it to plugins declaring the capability; ptp forwards it to the IPAM).
   */
  readonly podAnnotations?: Readonly<Record<string, string>>;
  /** The raw `prevResult`, if any. */
  readonly prevResult?: Readonly<Record<string, unknown>>;
  /**
   * GC's live attachments: `cni.dev/valid-attachments`, else the legacy `cni.dev/attachments`;
   * `null` reads as []; undefined when neither key is present (see docs/design-plugin.md).
   */
  readonly validAttachments?: readonly Attachment[];
}

interface SchemaError {
  readonly instancePath: string;
  readonly message?: string;
  readonly params: Record<string, unknown>;
}
/** The ahead-of-time compiled validator (ajv standalone; see scripts/build-plugin.ts). */
const validate = generated.validate as unknown as ((data: unknown) => boolean) & {
  errors?: SchemaError[] | null;
};

const defaultKubeconfig = '/etc/cni/net.d/blockipam-kubeconfig';
/** Default `ipam.cacheDir` (the host lock's directory). */
const defaultCacheDir = '/var/lib/cni/blockipam';

/**
 * Parses stdin text.
 * @throws CniError 6 when it is not a JSON object (empty stdin included); 1 for an unsupported
 *   `cniVersion`; 7 naming the field for anything the schema or the address rules reject
 */
export function parseNetConf(stdin: string): NetConf {
  let raw: unknown;
  try {
    raw = JSON.parse(stdin);
  } catch (e) {
    throw new CniError(CniCode.decodeFailure, 'error unmarshalling network config', (e as Error).message);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new CniError(
      CniCode.decodeFailure,
      'error unmarshalling network config',
      'stdin is not a JSON object',
    );
  }
  const obj = raw as Record<string, unknown>;
  const cniVersion = requireSupported(obj.cniVersion ?? implicitVersion);
  if (!validate(obj)) throw invalid(schemaMessage(validate.errors?.[0], obj));
  return normalise(obj as unknown as RawNetConf, cniVersion);
}

/** The runtimeConfig key (CRI capability) under which containerd passes the pod's annotations. */
const POD_ANNOTATIONS = 'io.kubernetes.cri.pod-annotations';

interface RawNetConf {
  name: string;
  ipam: {
    kubeconfig?: string;
    nodeName?: string;
    logFile?: string;
    logLevel?: NetConf['logLevel'];
    assignIPv4?: boolean;
    assignIPv6?: boolean;
    ipv4Pools?: string[];
    ipv6Pools?: string[];
    routes?: Route[];
    dns?: Dns;
    timeoutMs?: number;
    lockTimeoutMs?: number;
    cacheDir?: string;
    lockFile?: string;
    agentSocket?: string;
    mode?: NetConf['mode'];
    hostLocalStore?: string;
  };
  args?: { cni?: { ips?: string[] } };
  runtimeConfig?: { ips?: string[]; [POD_ANNOTATIONS]?: Record<string, string> };
  prevResult?: Record<string, unknown>;
  'cni.dev/valid-attachments'?: Attachment[] | null;
  'cni.dev/attachments'?: Attachment[] | null;
}

/**
 * Lengths the schema's patterns do not bound, at what crds/ipamblocks.yaml allows in an
 * allocation (`network` 256, `node` 253) and Kubernetes in a name (a pool: 253): longer ones
 * were sent and came back as the API server's 422 (code 106) naming the block, not the field.
 */
const maxLengths: readonly [string, (c: RawNetConf) => readonly (string | undefined)[], number][] = [
  ['name', (c) => [c.name], MAX_NETWORK_NAME],
  ['ipam.nodeName', (c) => [c.ipam.nodeName], 253],
  ['ipam.ipv4Pools', (c) => c.ipam.ipv4Pools ?? [], 253],
  ['ipam.ipv6Pools', (c) => c.ipam.ipv6Pools ?? [], 253],
];

/**
 * Why `name` cannot be a netconf's network name (SPEC §1's pattern, at most
 * {@link MAX_NETWORK_NAME} characters), or undefined when it can — the rule the plugin's netconf
 * applies, for whoever writes a conflist (the node agent's install mode).
 */
export function networkNameProblem(name: string): string | undefined {
  if (!new RegExp(NETWORK_NAME_PATTERN).test(name))
    return `must match ${NETWORK_NAME_PATTERN} (letters, digits, _ . -; a letter or digit first)`;
  if (name.length > MAX_NETWORK_NAME) return `${name.length} characters, at most ${MAX_NETWORK_NAME}`;
  return undefined;
}

function normalise(c: RawNetConf, cniVersion: CniVersion): NetConf {
  for (const [field, values, max] of maxLengths) {
    const long = values(c).findIndex((v) => v !== undefined && v.length > max);
    if (long >= 0) {
      const at = field.endsWith('Pools') ? `${field}[${long}]` : field;
      throw invalid(`${at}: ${values(c)[long]?.length} characters, at most ${max}`);
    }
  }
  const i = c.ipam;
  const families: IPFamily[] = [];
  if (i.assignIPv4 ?? true) families.push(4);
  if (i.assignIPv6 ?? false) families.push(6);
  if (families.length === 0)
    throw invalid('ipam: assignIPv4 and assignIPv6 are both false: nothing to assign');
  // the forwarder dials, and the agent listens on, the path with the wire version appended
  if (i.agentSocket !== undefined && Buffer.byteLength(i.agentSocket) > MAX_AGENT_SOCKET_BYTES)
    throw invalid(
      `ipam.agentSocket: ${Buffer.byteLength(i.agentSocket)} bytes, at most ${MAX_AGENT_SOCKET_BYTES} (a Unix socket path with ${JSON.stringify(agentSocketPath(''))} appended)`,
    );
  // connect() refuses a path holding NUL (EINVAL), which would read as an unusable agent (code 11)
  if (i.agentSocket?.includes('\0'))
    throw invalid('ipam.agentSocket: holds a NUL byte, which no Unix socket path can');
  if (i.mode === 'agent' && i.agentSocket === undefined)
    throw invalid('ipam.mode: "agent" needs ipam.agentSocket (the node agent\'s socket path)');
  const runtimeIPs = staticList(c.runtimeConfig?.ips, 'runtimeConfig.ips');
  const argsIPs = runtimeIPs ? undefined : staticList(c.args?.cni?.ips, 'args.cni.ips');
  const configIPs = runtimeIPs ?? argsIPs ?? [];
  const valid =
    c['cni.dev/valid-attachments'] !== undefined ? c['cni.dev/valid-attachments'] : c['cni.dev/attachments'];
  return {
    cniVersion,
    name: c.name,
    kubeconfig: i.kubeconfig ?? defaultKubeconfig,
    nodeName: i.nodeName ?? hostname().toLowerCase(),
    ...(i.logFile !== undefined ? { logFile: i.logFile } : {}),
    logLevel: i.logLevel ?? 'info',
    families,
    pools: { 4: i.ipv4Pools ?? [], 6: i.ipv6Pools ?? [] },
    routes: i.routes ? i.routes.map((r, n) => canonicalRoute(r, `ipam.routes[${n}]`)) : defaultRoutes([4, 6]),
    ...(i.dns !== undefined ? { dns: i.dns } : {}),
    timeoutMs: i.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    lockTimeoutMs: i.lockTimeoutMs ?? 60_000,
    cacheDir: i.cacheDir ?? defaultCacheDir,
    lockFile: i.lockFile ?? `${i.cacheDir ?? defaultCacheDir}/ipam.lock`,
    ...(i.agentSocket !== undefined ? { agentSocket: i.agentSocket } : {}),
    mode: i.mode ?? (i.agentSocket !== undefined ? 'agent' : 'standalone'),
    ...(i.hostLocalStore !== undefined ? { hostLocalStore: i.hostLocalStore } : {}),
    configIPs,
    ...(runtimeIPs ? { configIPsFrom: 'runtimeConfig.ips' as const } : {}),
    ...(argsIPs ? { configIPsFrom: 'args.cni.ips' as const } : {}),
    ...(c.runtimeConfig?.[POD_ANNOTATIONS] !== undefined
      ? { podAnnotations: c.runtimeConfig[POD_ANNOTATIONS] }
      : {}),
    ...(c.prevResult !== undefined ? { prevResult: c.prevResult } : {}),
    ...(valid !== undefined ? { validAttachments: valid ?? [] } : {}),
  };
}

function defaultRoutes(families: readonly IPFamily[]): Route[] {
  return families.map((f) => ({ dst: f === 4 ? '0.0.0.0/0' : '::/0' }));
}

/** Masks `dst` to its network address (ptp fails on host bits) and checks `gw`. */
function canonicalRoute(r: Route, field: string): Route {
  const dst = parseCidr(r.dst, { strict: false }); // host bits allowed, masked below
  if (!dst) throw invalid(`${field}.dst: not a CIDR: ${JSON.stringify(r.dst)}`);
  if (r.gw !== undefined) {
    const gw = parseIP(r.gw);
    if (!gw || gw.family !== dst.family)
      throw invalid(`${field}.gw: not an IPv${dst.family} address: ${JSON.stringify(r.gw)}`);
  }
  return { ...r, dst: formatCidr(dst) };
}

/** The address of `10.1.0.7` or `10.1.0.7/24` (a valid prefix, ignored); undefined otherwise. */
function addressOf(text: string): IP | undefined {
  const slash = text.indexOf('/');
  if (slash >= 0 && !parseCidr(text, { strict: false })) return undefined;
  return parseIP(slash < 0 ? text : text.slice(0, slash));
}

/**
 * Checks a static IP list: addresses (prefix ignored), at most one per family.
 * @returns undefined for an absent or empty list (so the next source applies)
 */
export function staticList(ips: readonly string[] | undefined, field: string): string[] | undefined {
  if (ips === undefined || ips.length === 0) return undefined;
  const seen = new Set<IPFamily>();
  return ips.map((text, n) => {
    const ip = addressOf(text);
    if (!ip) throw invalid(`${field}[${n}]: not an IP address: ${JSON.stringify(text)}`);
    if (seen.has(ip.family)) throw invalid(`${field}: more than one IPv${ip.family} address requested`);
    seen.add(ip.family);
    return text.split('/')[0] as string;
  });
}

export function invalid(msg: string): CniError {
  return new CniError(CniCode.invalidConfig, 'Invalid network config', msg);
}

/** The value at a JSON pointer (`/ipam/ipv6Pools/0`) of `root`. */
function valueAt(root: unknown, pointer: string): unknown {
  return pointer
    .split('/')
    .slice(1)
    .reduce<unknown>((v, key) => (v as Record<string, unknown> | undefined)?.[key], root);
}

/** A scalar as JSON (at most 100 characters), else its kind: a hostile value may be nested deep. */
function shownValue(value: unknown): string {
  if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) {
    const text = JSON.stringify(value);
    return text.length > 100 ? `${text.slice(0, 100)}…` : text;
  }
  return Array.isArray(value) ? 'an array' : `a value of type ${typeof value}`;
}

/** Turns an ajv error on `root` into `field.path: problem`, naming the offending field. */
function schemaMessage(e: SchemaError | undefined, root: unknown): string {
  if (!e) return 'invalid';
  const path = e.instancePath
    .split('/')
    .slice(1)
    .map((s) => (/^\d+$/.test(s) ? `[${s}]` : `.${s.replace(/~1/g, '/').replace(/~0/g, '~')}`))
    .join('')
    .replace(/^\./, '');
  const p = e.params;
  if (typeof p.missingProperty === 'string')
    return `${path ? `${path}.` : ''}${p.missingProperty}: required field missing`;
  if (typeof p.additionalProperty === 'string')
    return `${path ? `${path}.` : ''}${p.additionalProperty}: unknown field`;
  if (p.allowedValue !== undefined) return `${path}: must be ${JSON.stringify(p.allowedValue)}`;
  if (Array.isArray(p.allowedValues))
    return `${path}: ${shownValue(valueAt(root, e.instancePath))} is not one of ${p.allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
  // The pool lists take names; a CIDR there ("FD00::/64") failed with the bare regex.
  if (p.pattern !== undefined && /^ipam\.ipv[46]Pools\[\d+\]$/.test(path))
    return `${path}: ${JSON.stringify(valueAt(root, e.instancePath))} is not an IPPool name: give the pool's metadata.name (lower-case letters, digits, '-' and '.'), not its CIDR`;
  if (p.pattern !== undefined && path === 'ipam.nodeName')
    return `${path}: ${JSON.stringify(valueAt(root, e.instancePath))} is not a Kubernetes node name (lower-case letters, digits, '-' and '.')`;
  return `${path || '(config)'}: ${e.message ?? 'invalid'}`;
}
