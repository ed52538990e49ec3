/**
 * The agent's command line (yargs; every option also from `BLOCKIPAM_AGENT_<NAME>`, e.g.
 * BLOCKIPAM_AGENT_NODE_NAME). `run` (default): the agent; `install`: install the plugin, its
 * kubeconfig and the conflist once and exit (an init container). Kubernetes' downward-API
 * variables fill the pod fields: NODE_NAME, POD_NAMESPACE; the chart sets SERVICE_ACCOUNT_NAME (the
 * plugin's ServiceAccount).
 */
import yargs from 'yargs';
import { isAbsolute, join } from 'node:path';
import { existsSync } from 'node:fs';
import { parseCidr } from 'blockipam/core';
import { networkNameProblem } from 'blockipam/core/cni';
import { agentSocketPath, MAX_AGENT_SOCKET_BYTES } from 'blockipam/core/node-ipam';
import { kubeServerProblem } from 'blockipam/core/kube';
import type { Cidr } from 'blockipam/core';
import { LOG_LEVELS } from '../shared/index.ts';
import type { PluginSettings } from './install/conflist.ts';
import type { LogLevel } from '../shared/index.ts';
import { checkMetricsFlags, isNodeName, shownNumber } from '../shared/usage.ts';
import { DEFAULT_IPAM_SOCKET } from './ipam/socket-path.ts';

export interface AgentOptions {
  /**
   * `help`: --help was asked for and printed (stdout); `version`: --version was asked for
   * (the caller prints core/version.ts's line). The caller exits 0 for both.
   */
  readonly command: 'run' | 'install' | 'help' | 'version';
  readonly nodeName: string;
  readonly kubeconfig?: string;
  readonly context?: string;
  readonly apiServer?: string;
  readonly logLevel: LogLevel;
  readonly metricsHost: string;
  readonly metricsPort: number;
  /** The IPAM server's Unix socket (ipam/); empty string = no IPAM server. */
  readonly ipamSocket: string;
  /** Period of the timed pre-claim pass, s. */
  readonly upkeepSeconds: number;
  /** Program routes to other nodes' blocks (routes/). */
  readonly routes: boolean;
  /** The `ip` command and leading arguments for routes, e.g. ["ip", "-n", "node1"]. */
  readonly ipCommand: readonly string[];
  /**
   * Pod egress masquerade (masquerade/): true = keep the rule; false = remove the agent's table
   * at start; undefined (the flag not given) = never run `nft` at all.
   */
  readonly masquerade?: boolean;
  /** Destinations that keep the pod's source address besides the pools (masked CIDRs). */
  readonly nonMasqueradeCidrs: readonly Cidr[];
  /** The `nft` command and leading arguments for masquerade, default ["nft"]. */
  readonly nftCommand: readonly string[];
  /** Also do install mode at start-up, then keep the token fresh. */
  readonly installCni: boolean;
  readonly cniBinDir: string;
  readonly cniConfDir: string;
  readonly pluginBinary?: string;
  /**
   * The native forwarder installed as the plugin, `pluginBinary` beside it as `blockipam-direct`
   * (install/installer.ts); undefined: `pluginBinary` is the plugin.
   */
  readonly forwarderBinary?: string;
  readonly conflistName: string;
  readonly networkName: string;
  readonly cniVersion: string;
  readonly mtu?: number;
  readonly portmap: boolean;
  /** Families of the pods' addresses (the conflist's assignIPv4 / assignIPv6); not both false. */
  readonly assignIpv4: boolean;
  readonly assignIpv6: boolean;
  /** The plugin's netconf settings written into the conflist (--plugin-log-level …). */
  readonly plugin: PluginSettings;
  readonly pluginKubeconfig: string;
  readonly pluginApiServer?: string;
  readonly serviceAccount?: string;
  readonly namespace?: string;
  readonly tokenAudiences: readonly string[];
  readonly tokenExpirationSeconds: number;
  readonly tokenRefreshSeconds?: number;
  /**
   * With installCni: the agent's own DaemonSet (in `namespace`); once it is deleted (`helm
   * uninstall`) the agent removes the conflist and the plugin's kubeconfig (install/owner.ts).
   * Undefined: the files stay whatever happens.
   */
  readonly ownerDaemonSet?: string;
  /**
   * host-local's store (`<dataDir>/<network>`) of the network this node's pods are on before it is
   * adopted (adopt/host-local.ts): the conflist is written only while the Node is labelled
   * `blockipam.io/adopt=true`, with `ipam.hostLocalStore`, and the store's addresses are imported.
   * Undefined: no adoption, the conflist is written at once.
   */
  readonly hostLocalStore?: string;
  /** How long a store file stays unmatched by any pod before it is quarantined, s. */
  readonly hostLocalGraceSeconds: number;
}

/**
 * The cniVersions the agent writes into its conflist — those the chart's `cni.cniVersion` allows
 * (charts/blockipam/values.schema.json): ptp chained with portmap needs 0.4.0's prevResult and
 * CHECK; 1.1.0 brings STATUS and GC.
 */
const CONFLIST_CNI_VERSIONS = ['0.4.0', '1.0.0', '1.1.0'] as const;

/**
 * The image's native forwarder (scripts/build-image.sh): `--forwarder-binary`'s default when the
 * file exists.
 */
export const IMAGE_FORWARDER = '/usr/local/bin/blockipam-forwarder';

/** The integer options and their bounds, inclusive (checked at start-up, naming the flag). */
const INTEGER_RANGES = [
  // 576: the IPv4 minimum datagram (RFC 791); 65535: the largest Linux lets a veth have (ETH_MAX_MTU)
  ['mtu', 576, 65_535],
  // the plugin's netconf bounds (core/cni/netconf.ts), refused here at start-up, not at its first call
  ['plugin-timeout-ms', 100, 600_000],
  ['plugin-lock-timeout-ms', 0, 600_000],
  // the TokenRequest API refuses less than 10 minutes — after the plugin was already installed
  ['token-expiration-seconds', 600, 86_400],
] as const;

/** `--plugin-binary self`: copy the running executable (the image's multi-call blockipam). */
const PLUGIN_BINARY_SELF = 'self';

/**
 * The running file when it is a Bun-compiled executable (its entry module lives in Bun's
 * embedded file system, `/$bunfs/…`; process.execPath is then the executable itself, whatever
 * name or symlink it was started by), else undefined (under node or `bun run`, execPath is the
 * runtime, not blockipam).
 */
function selfExecutable(): string | undefined {
  return process.argv[1]?.startsWith('/$bunfs/') ? process.execPath : undefined;
}

/** `--forwarder-binary`: the file named, none for "", else the image's forwarder when present. */
function forwarderOf(flag: string | undefined): { forwarderBinary?: string } {
  if (flag !== undefined) return flag === '' ? {} : { forwarderBinary: flag };
  return existsSync(IMAGE_FORWARDER) ? { forwarderBinary: IMAGE_FORWARDER } : {};
}

/**
 * Parses argv.
 * @throws Error with yargs' message naming the bad or missing option
 */
export async function parseOptions(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<AgentOptions> {
  const parsed = await yargs([...argv])
    .scriptName('blockipam-agent')
    .env('BLOCKIPAM_AGENT')
    .version(false) // before .options: our own --version (core/version.ts's one form for every role)
    .command(['run', '$0'], 'run the node agent')
    .command('install', 'install the CNI plugin, its kubeconfig and the conflist once, then exit')
    .options({
      version: { type: 'boolean', describe: 'Print "blockipam-agent <version>" and exit' },
      'node-name': { type: 'string', default: env.NODE_NAME, describe: 'This node (default $NODE_NAME)' },
      kubeconfig: { type: 'string', describe: 'Kubeconfig file (default: the pod service account)' },
      context: { type: 'string', describe: 'Kubeconfig context' },
      'api-server': { type: 'string', describe: 'API server URL override (clusters without kube-proxy)' },
      'log-level': { choices: LOG_LEVELS, default: 'info' },
      'metrics-host': { type: 'string', default: '0.0.0.0' },
      'metrics-port': {
        type: 'number',
        default: 9465,
        describe: '/metrics, /healthz, /readyz (0 = any free port)',
      },
      'ipam-socket': {
        type: 'string',
        default: DEFAULT_IPAM_SOCKET,
        describe: 'Serve IPAM for this node on this Unix socket, root-only ("" = off)',
      },
      'upkeep-seconds': { type: 'number', default: 10, describe: 'Period of the timed pre-claim pass' },
      routes: { type: 'boolean', default: false, describe: 'Program routes to the other nodes’ blocks' },
      'ip-command': {
        type: 'string',
        array: true,
        default: ['ip'],
        describe: 'iproute2 command for --routes',
      },
      masquerade: {
        type: 'boolean',
        describe:
          'Masquerade pod traffic leaving the pools (false: remove the rule; not given: leave nftables alone)',
      },
      'non-masquerade-cidr': {
        type: 'string',
        array: true,
        default: [] as string[],
        describe: 'Destination CIDR that keeps the pod source address besides the pools (repeatable)',
      },
      'nft-command': {
        type: 'string',
        array: true,
        default: ['nft'],
        describe: 'nftables command for --masquerade',
      },
      'install-cni': {
        type: 'boolean',
        default: false,
        describe: 'Install the plugin at start-up and refresh its token',
      },
      'cni-bin-dir': { type: 'string', default: '/opt/cni/bin' },
      'cni-conf-dir': { type: 'string', default: '/etc/cni/net.d' },
      'plugin-binary': {
        type: 'string',
        describe: 'Plugin executable to copy into --cni-bin-dir ("self": this multi-call executable)',
      },
      'forwarder-binary': {
        type: 'string',
        describe: `Native forwarder installed as the plugin, --plugin-binary beside it as blockipam-direct (default ${IMAGE_FORWARDER} when it exists; "" for none)`,
      },
      'conflist-name': { type: 'string', default: '10-blockipam.conflist' },
      'network-name': { type: 'string', default: 'blockipam' },
      'cni-version': {
        choices: CONFLIST_CNI_VERSIONS,
        default: '1.1.0',
        describe: 'The conflist’s cniVersion (1.1.0 brings STATUS and GC)',
      },
      mtu: { type: 'number', describe: 'Pod interface MTU (default: ptp’s)' },
      portmap: { type: 'boolean', default: true, describe: 'Chain portmap (hostPort)' },
      'assign-ipv4': {
        type: 'boolean',
        default: true,
        describe: 'Pods get an IPv4 address (--assign-ipv4=false with --assign-ipv6: IPv6-only)',
      },
      'assign-ipv6': { type: 'boolean', default: false, describe: 'Pods get an IPv6 address' },
      'plugin-log-level': {
        choices: LOG_LEVELS,
        describe: 'The plugin’s log file threshold (conflist ipam.logLevel; default: the plugin’s, info)',
      },
      'plugin-log-file': {
        type: 'string',
        describe: 'The plugin’s JSON-lines log file, an absolute path (default: none, stderr only)',
      },
      'plugin-timeout-ms': {
        type: 'number',
        describe: 'The plugin’s allocation budget once it holds the host lock (100-600000; default 30000)',
      },
      'plugin-lock-timeout-ms': {
        type: 'number',
        describe: 'How long the plugin waits for the host lock (0-600000; default 60000)',
      },
      'plugin-kubeconfig': {
        type: 'string',
        describe:
          'The plugin’s kubeconfig, named in the conflist (default <--cni-conf-dir>/blockipam-kubeconfig)',
      },
      'plugin-api-server': {
        type: 'string',
        describe: 'API server URL written for the plugin (default: the agent’s)',
      },
      'service-account': {
        type: 'string',
        default: env.SERVICE_ACCOUNT_NAME,
        describe: 'ServiceAccount of the plugin’s token (bound to this Node)',
      },
      namespace: {
        type: 'string',
        default: env.POD_NAMESPACE,
        describe: 'Its namespace (default $POD_NAMESPACE)',
      },
      'token-audience': { type: 'string', array: true, default: [] as string[] },
      'token-expiration-seconds': { type: 'number', default: 3600 },
      'token-refresh-seconds': {
        type: 'number',
        describe: 'Refresh after this instead of half the lifetime',
      },
      'host-local-store': {
        type: 'string',
        describe:
          'host-local’s store (<dataDir>/<network>, absolute) to adopt: the conflist only while the Node is labelled blockipam.io/adopt=true, and the store’s addresses imported (default: none)',
      },
      'host-local-grace-seconds': {
        type: 'number',
        default: 120,
        describe: 'How long a host-local file no pod holds waits before it is quarantined',
      },
      'owner-daemonset': {
        type: 'string',
        describe:
          'The agent’s own DaemonSet in --namespace: when it is deleted (uninstall), remove the conflist and the plugin’s kubeconfig (never on a restart)',
      },
    })
    .check((a) => {
      if (a.help || a.version) return true; // nothing else is required then
      if (!a['node-name']) throw new Error('--node-name (or $NODE_NAME) is required');
      if (!isNodeName(a['node-name']))
        throw new Error(
          `--node-name must be a Kubernetes node name (a lower-case DNS subdomain), not ${JSON.stringify(a['node-name'])}`,
        );
      checkMetricsFlags(a);
      for (const key of ['upkeep-seconds', 'token-expiration-seconds'] as const)
        if (!Number.isFinite(a[key]) || a[key] < 0)
          throw new Error(`--${key} must be a number >= 0, not ${shownNumber(a[key])}`);
      for (const [key, min, max] of INTEGER_RANGES) {
        const v = a[key];
        if (v !== undefined && !(Number.isInteger(v) && v >= min && v <= max))
          throw new Error(`--${key} must be an integer ${min}-${max}, not ${shownNumber(v)}`);
      }
      const lifetime = a['token-expiration-seconds'];
      const refresh = a['token-refresh-seconds'];
      if (refresh !== undefined && !(Number.isFinite(refresh) && refresh > 0 && refresh < lifetime))
        throw new Error(
          `--token-refresh-seconds must be a number above 0 and below --token-expiration-seconds (${lifetime}), not ${shownNumber(refresh)}`,
        );
      for (const key of ['api-server', 'plugin-api-server'] as const) {
        const server = a[key];
        const problem = server === undefined || server === '' ? undefined : kubeServerProblem(server);
        if (problem) throw new Error(`--${key} ${problem}`);
      }
      if (!a['assign-ipv4'] && !a['assign-ipv6'])
        throw new Error('--assign-ipv4=false needs --assign-ipv6 (pods would get no address)');
      const socket = a['ipam-socket'];
      if (socket !== '' && (!isAbsolute(socket) || Buffer.byteLength(socket) > MAX_AGENT_SOCKET_BYTES))
        throw new Error(
          `--ipam-socket must be an absolute path of at most ${MAX_AGENT_SOCKET_BYTES} bytes (the agent listens on it with ${JSON.stringify(agentSocketPath(''))} appended), not ${JSON.stringify(socket)}`,
        );
      for (const text of a['non-masquerade-cidr'])
        if (!parseCidr(String(text)))
          throw new Error(
            `--non-masquerade-cidr must be a masked CIDR (address/prefix length, host bits 0), not ${JSON.stringify(text)}`,
          );
      const networkProblem = networkNameProblem(a['network-name']);
      if (networkProblem)
        throw new Error(`--network-name ${JSON.stringify(a['network-name'])}: ${networkProblem}`);
      // a file name in --cni-conf-dir that the runtime reads (libcni loads *.conf, *.conflist, *.json)
      if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*\.conflist$/.test(a['conflist-name']))
        throw new Error(
          `--conflist-name must be a file name ending in .conflist (letters, digits, _ . -; no /), not ${JSON.stringify(a['conflist-name'])}`,
        );
      const logFile = a['plugin-log-file'];
      // the plugin's netconf refuses these too, but only at its first call: refused here at start-up
      if (logFile !== undefined && logFile !== '' && !isAbsolute(logFile))
        throw new Error(`--plugin-log-file must be an absolute path, not ${JSON.stringify(logFile)}`);
      if ((a['install-cni'] || a._[0] === 'install') && (!a['service-account'] || !a.namespace))
        throw new Error(
          'install mode needs --service-account and --namespace (or $SERVICE_ACCOUNT_NAME, $POD_NAMESPACE)',
        );
      const store = a['host-local-store'];
      if (store !== undefined && store !== '' && (!isAbsolute(store) || store === '/'))
        throw new Error(
          `--host-local-store must be an absolute directory path, not ${JSON.stringify(store)}`,
        );
      if (store && !a['install-cni'])
        throw new Error('--host-local-store needs --install-cni (the conflist follows the adoption label)');
      const grace = a['host-local-grace-seconds'];
      if (!Number.isFinite(grace) || grace < 0)
        throw new Error(`--host-local-grace-seconds must be a number >= 0, not ${shownNumber(grace)}`);
      if (a['owner-daemonset'] && !a['install-cni'])
        throw new Error('--owner-daemonset needs --install-cni (it removes what install mode wrote)');
      if (a['plugin-binary'] === PLUGIN_BINARY_SELF && selfExecutable() === undefined)
        throw new Error(
          '--plugin-binary self needs the multi-call blockipam executable (this process is not one: name a file)',
        );
      return true;
    })
    .strict()
    .help()
    .exitProcess(false)
    .fail((message, error) => {
      throw error ?? new Error(message);
    })
    .parseAsync();
  const opt = <T>(value: T | undefined): T | undefined => (value === '' ? undefined : value);
  return {
    command: parsed.help
      ? 'help'
      : parsed.version
        ? 'version'
        : parsed._[0] === 'install'
          ? 'install'
          : 'run',
    nodeName: parsed['node-name'] as string,
    kubeconfig: opt(parsed.kubeconfig),
    context: opt(parsed.context),
    apiServer: opt(parsed['api-server']),
    logLevel: parsed['log-level'] as LogLevel,
    metricsHost: parsed['metrics-host'],
    metricsPort: parsed['metrics-port'],
    ipamSocket: parsed['ipam-socket'],
    upkeepSeconds: parsed['upkeep-seconds'],
    routes: parsed.routes,
    ipCommand: parsed['ip-command'],
    ...(parsed.masquerade === undefined ? {} : { masquerade: parsed.masquerade }),
    nonMasqueradeCidrs: parsed['non-masquerade-cidr'].map((t) => parseCidr(String(t)) as Cidr),
    nftCommand: parsed['nft-command'],
    installCni: parsed['install-cni'],
    cniBinDir: parsed['cni-bin-dir'],
    cniConfDir: parsed['cni-conf-dir'],
    pluginBinary:
      parsed['plugin-binary'] === PLUGIN_BINARY_SELF ? selfExecutable() : opt(parsed['plugin-binary']),
    ...forwarderOf(parsed['forwarder-binary']),
    conflistName: parsed['conflist-name'],
    networkName: parsed['network-name'],
    cniVersion: parsed['cni-version'],
    mtu: parsed.mtu,
    portmap: parsed.portmap,
    assignIpv4: parsed['assign-ipv4'],
    assignIpv6: parsed['assign-ipv6'],
    plugin: {
      ...(parsed['plugin-log-level'] ? { logLevel: parsed['plugin-log-level'] } : {}),
      ...(opt(parsed['plugin-log-file']) ? { logFile: parsed['plugin-log-file'] } : {}),
      ...(parsed['plugin-timeout-ms'] !== undefined ? { timeoutMs: parsed['plugin-timeout-ms'] } : {}),
      ...(parsed['plugin-lock-timeout-ms'] !== undefined
        ? { lockTimeoutMs: parsed['plugin-lock-timeout-ms'] }
        : {}),
    },
    // beside the conflist unless named: a --cni-conf-dir elsewhere must not write /etc/cni
    pluginKubeconfig: parsed['plugin-kubeconfig'] || join(parsed['cni-conf-dir'], 'blockipam-kubeconfig'),
    pluginApiServer: opt(parsed['plugin-api-server']),
    serviceAccount: opt(parsed['service-account']),
    namespace: opt(parsed.namespace),
    tokenAudiences: parsed['token-audience'],
    tokenExpirationSeconds: parsed['token-expiration-seconds'],
    tokenRefreshSeconds: parsed['token-refresh-seconds'],
    ownerDaemonSet: opt(parsed['owner-daemonset']),
    ...(opt(parsed['host-local-store']) ? { hostLocalStore: parsed['host-local-store'] } : {}),
    hostLocalGraceSeconds: parsed['host-local-grace-seconds'],
  };
}
