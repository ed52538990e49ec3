/**
 * Whether a pod may still use an address (pure): the one rule GC (gc.ts), the cluster
 * controller's leak verdict and ipamctl share. A pod's sandbox — and its address — may be live
 * unless the pod is `Succeeded` / `Failed` (their sandbox is gone though `status.podIP` stays) or
 * host-network (it reports the node's address, which no block holds).
 */
import { formatIP, parseIP } from '../address/ip.ts';
import type { Pod } from '../resources.ts';

/** True for a pod whose sandbox (and address) may be live. */
export function isLivePod(pod: Pod): boolean {
  const phase = pod.status?.phase;
  return pod.spec?.hostNetwork !== true && phase !== 'Succeeded' && phase !== 'Failed';
}

/** A pod's IPs in canonical text (status.podIPs and status.podIP, deduplicated; unparseable ones dropped). */
export function podIPs(pod: Pod): string[] {
  const texts = [
    ...(pod.status?.podIPs ?? []).map((p) => p.ip),
    ...(pod.status?.podIP ? [pod.status.podIP] : []),
  ];
  const ips = texts.map((text) => parseIP(text)).filter((ip) => ip !== undefined);
  return [...new Set(ips.map(formatIP))];
}
