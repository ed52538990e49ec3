/**
 * CNI_ARGS parsing (CNI SPEC §"Parameters"; pkg/types/args.go), with a deliberate leniency:
 * the Kubernetes keys runtimes always send are known keys here, so they are accepted even
 * without `IgnoreUnknown` (conformance case 24 — host-local errors instead).
 */
import { CniCode, CniError } from './errors.ts';

/** The CNI_ARGS keys blockipam understands. */
export interface CniArgs {
  readonly podNamespace?: string;
  readonly podName?: string;
  readonly podUID?: string;
  readonly infraContainerID?: string;
  /** `IP=`: requested addresses, comma-separated in the variable; prefix lengths are ignored. */
  readonly ips: readonly string[];
}

const known = new Set([
  'IgnoreUnknown',
  'K8S_POD_NAMESPACE',
  'K8S_POD_NAME',
  'K8S_POD_UID',
  'K8S_POD_INFRA_CONTAINER_ID',
  'IP',
]);

const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** Container IDs (Go skel rule) and pod UIDs (RFC 4122 text in practice). */
const idChars = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;

/** A problem with `v` as a Kubernetes name of at most `max` characters, or undefined. */
function nameProblem(v: string, max: number, re: RegExp, what: string): string | undefined {
  if (v.length > max) return `longer than ${max} characters (${v.length})`;
  if (!re.test(v)) return `not a valid ${what}: ${JSON.stringify(v)}`;
  return undefined;
}

/** Per-key checks of the Kubernetes keys, so a bad value never reaches the API server. */
const checks: readonly [string, (v: string) => string | undefined][] = [
  ['K8S_POD_NAMESPACE', (v) => nameProblem(v, 63, dnsLabel, 'DNS label')],
  ['K8S_POD_NAME', (v) => nameProblem(v, 253, dnsSubdomain, 'DNS subdomain')],
  ['K8S_POD_INFRA_CONTAINER_ID', (v) => nameProblem(v, 256, idChars, 'container ID')],
  // 64: an allocation's podUID (crds/ipamblocks.yaml); a longer one was the API server's 422
  ['K8S_POD_UID', (v) => nameProblem(v, 64, idChars, 'UID')],
];

/**
 * Parses `K=V;K=V` in any order. Keys are case-sensitive.
 * @throws CniError code 4 for a malformed pair (no `=`, more than one `=`, empty key or an empty
 *   pair such as a trailing `;`), without `IgnoreUnknown=1|true` for unknown keys, and for a
 *   K8S_POD_* value that is not a valid name / ID (naming the key; DNS subdomain ≤ 253 for the
 *   pod name, DNS label ≤ 63 for the namespace, `[a-zA-Z0-9][a-zA-Z0-9_.-]*` for the IDs)
 */
export function parseCniArgs(raw: string): CniArgs {
  if (raw === '') return { ips: [] };
  const pairs = new Map<string, string>();
  for (const pair of raw.split(';')) {
    const kv = pair.split('=');
    if (kv.length !== 2 || kv[0] === '' || kv[1] === '') {
      throw new CniError(
        CniCode.invalidEnv,
        'invalid CNI_ARGS pair',
        `CNI_ARGS pair ${JSON.stringify(pair)} is not KEY=VALUE`,
      );
    }
    pairs.set(kv[0] as string, kv[1] as string);
  }
  const ignoreUnknown = ['1', 'true'].includes((pairs.get('IgnoreUnknown') ?? '').toLowerCase());
  const unknown = [...pairs].filter(([k]) => !known.has(k)).map(([k, v]) => `${k}=${v}`);
  if (unknown.length > 0 && !ignoreUnknown) {
    throw new CniError(
      CniCode.invalidEnv,
      `CNI_ARGS: unknown args ${JSON.stringify(unknown)}`,
      'set IgnoreUnknown=1 to ignore them',
    );
  }
  for (const [key, check] of checks) {
    const v = pairs.get(key);
    const problem = v === undefined ? undefined : check(v);
    if (problem !== undefined)
      throw new CniError(CniCode.invalidEnv, `invalid CNI_ARGS ${key}`, `CNI_ARGS ${key}: ${problem}`);
  }
  const ip = pairs.get('IP');
  return {
    ...optional('podNamespace', pairs.get('K8S_POD_NAMESPACE')),
    ...optional('podName', pairs.get('K8S_POD_NAME')),
    ...optional('podUID', pairs.get('K8S_POD_UID')),
    ...optional('infraContainerID', pairs.get('K8S_POD_INFRA_CONTAINER_ID')),
    ips: ip === undefined ? [] : ip.split(',').filter((s) => s !== ''),
  };
}

function optional<K extends string>(key: K, v: string | undefined): { [P in K]?: string } {
  return (v === undefined ? {} : { [key]: v }) as { [P in K]?: string };
}

/**
 * K8S_POD_UID of a raw CNI_ARGS, leniently (DEL must never fail on CNI_ARGS): undefined when
 * absent, or when the value or the string around it is not well formed.
 */
export function podUIDOf(raw: string): string | undefined {
  try {
    return parseCniArgs(raw).podUID;
  } catch {
    return undefined;
  }
}
