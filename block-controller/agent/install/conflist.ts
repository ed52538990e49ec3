/**
 * The CNI network configuration list the agent installs (pure): ptp as the main plugin with
 * blockipam as its IPAM, then portmap. ptp declares the `io.kubernetes.cri.pod-annotations`
 * capability, so containerd hands it the pod's annotations and ptp forwards them to blockipam
 * (which then reads its pool and static-address annotations there instead of GETting the pod);
 * portmap declares `portMappings` (hostPort). Only fields the plugin's netconf schema knows go
 * into `ipam` (it refuses unknown ones).
 */

export interface ConflistOptions {
  /** Network name (the handle prefix). Default "blockipam". */
  readonly networkName?: string;
  /** Default "1.1.0" (STATUS and GC; containerd 2.x speaks it). */
  readonly cniVersion?: string;
  /** Pod interface MTU; undefined = ptp's default (the host's route MTU). */
  readonly mtu?: number;
  /** Include portmap (hostPort). Default true. */
  readonly portmap?: boolean;
  /** ptp's ipMasq (SNAT of pod traffic leaving the node). Default false. */
  readonly ipMasq?: boolean;
  /** Path of the plugin's kubeconfig (absolute). */
  readonly kubeconfig: string;
  /** The node name the plugin uses; undefined = its default (the host name). */
  readonly nodeName?: string;
  /**
   * The agent's IPAM socket (absolute path), written as `ipam.agentSocket`: the plugin forwards
   * each call there. Undefined: the agent serves no IPAM and the field is left out.
   */
  readonly agentSocket?: string;
  /**
   * The address families every pod gets, as the configured pools' (the chart passes them):
   * IPv4 only (the default), IPv6 only (`assignIPv4: false, assignIPv6: true`) or both.
   * Written as the plugin's netconf `ipam.assignIPv4` / `assignIPv6` (defaults true / false there).
   * @throws Error from conflistFor when both are false (the plugin would refuse every ADD)
   */
  readonly assignIPv4?: boolean;
  /** See assignIPv4. Default false. */
  readonly assignIPv6?: boolean;
  /** The plugin's own settings; each written only when set (the plugin's defaults otherwise). */
  readonly plugin?: PluginSettings;
  /**
   * host-local's store while the node is adopted from it, written as `ipam.hostLocalStore`
   * (core/cni/host-local-store.ts); undefined: left out.
   */
  readonly hostLocalStore?: string;
}

/**
 * Plugin netconf `ipam` fields an operator sets through the agent (the chart's `plugin.*`
 * values); names, ranges and defaults are the plugin's (docs/design-plugin.md §Netconf).
 */
export interface PluginSettings {
  /** Threshold of the plugin's log file: error / warn / info / debug (plugin default info). */
  readonly logLevel?: 'error' | 'warn' | 'info' | 'debug';
  /** Absolute path of the plugin's JSON-lines log file (plugin default: none, stderr only). */
  readonly logFile?: string;
  /** Budget of the allocation step once the host lock is held, ms, 100–600 000 (default 30 000). */
  readonly timeoutMs?: number;
  /** How long a call waits for the host lock, ms, 0–600 000 (default 60 000; then CNI code 11). */
  readonly lockTimeoutMs?: number;
}

const POD_ANNOTATIONS_CAPABILITY = 'io.kubernetes.cri.pod-annotations';

/**
 * The conflist document.
 * @throws Error when assignIPv4 and assignIPv6 are both false (no address family)
 */
export function conflistFor(options: ConflistOptions): Record<string, unknown> {
  const ipv4 = options.assignIPv4 ?? true;
  const ipv6 = options.assignIPv6 ?? false;
  if (!ipv4 && !ipv6) throw new Error('assignIPv4 and assignIPv6 are both false: pods would get no address');
  const ipam: Record<string, unknown> = { type: 'blockipam', kubeconfig: options.kubeconfig };
  if (options.nodeName !== undefined) ipam.nodeName = options.nodeName;
  if (options.agentSocket !== undefined) ipam.agentSocket = options.agentSocket;
  if (!ipv4) ipam.assignIPv4 = false;
  if (ipv6) ipam.assignIPv6 = true;
  for (const [key, value] of Object.entries(options.plugin ?? {})) if (value !== undefined) ipam[key] = value;
  if (options.hostLocalStore !== undefined) ipam.hostLocalStore = options.hostLocalStore;
  const ptp: Record<string, unknown> = {
    type: 'ptp',
    ipMasq: options.ipMasq ?? false,
    ...(options.mtu !== undefined ? { mtu: options.mtu } : {}),
    capabilities: { [POD_ANNOTATIONS_CAPABILITY]: true },
    ipam,
  };
  const plugins: Record<string, unknown>[] = [ptp];
  if (options.portmap ?? true) plugins.push({ type: 'portmap', capabilities: { portMappings: true } });
  return { cniVersion: options.cniVersion ?? '1.1.0', name: options.networkName ?? 'blockipam', plugins };
}
