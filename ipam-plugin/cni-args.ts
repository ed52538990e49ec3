/**
 * CNI_ARGS parsing (research/cni-spec.md §4; pkg/types/args.go), with a deliberate leniency:
 * the Kubernetes keys runtimes always send are known keys here, so they are accepted even
 * without `IgnoreUnknown` (cni-spec §8 case 24 — host-local errors instead).
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

/**
 * Parses `K=V;K=V` in any order. Keys are case-sensitive.
 * @throws CniError code 4 for a malformed pair (no `=`, more than one `=`, empty key or an empty
 *   pair such as a trailing `;`) or, without `IgnoreUnknown=1|true`, for unknown keys
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
