/**
 * Finding the API server like kubectl does, then talking to it over core's lean transport.
 *
 * Discovery order (kubectl's): `--kubeconfig FILE`; else `KUBECONFIG` (a path list, merged
 * first-wins, as client-go does); else `$HOME/.kube/config`; else in-cluster (service account).
 * `--context` picks a context. The kubeconfig is parsed by @kubernetes/client-node's KubeConfig,
 * which also runs exec / auth-provider credential plugins; the resolved server, CA, client
 * certificate and bearer token are then handed to core's KubeTransport, so ipamctl sends exactly
 * the requests the rest of blockipam sends (docs/design-cli.md §Connecting).
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { KubeDatastore, KubeTransport, kubeServerProblem, tlsMaterialProblem } from 'blockipam/core/kube';
import { inClusterConfig } from 'blockipam/core/kubeconfig';
import type { KubeClientConfig } from 'blockipam/core/kube';
import type { KubeConfig } from '@kubernetes/client-node';
import { CliError } from './io.ts';
import type { Io } from './io.ts';

/** Connection flags every command accepts. */
export interface ConnectionFlags {
  kubeconfig?: string;
  context?: string;
  /** Per-request timeout, seconds. */
  requestTimeout?: number;
}

/** The kubeconfig files to load, in kubectl's order; empty = in-cluster. */
function kubeconfigFiles(flags: ConnectionFlags, io: Io): string[] {
  const cwd = io.cwd ?? process.cwd();
  if (flags.kubeconfig) return [resolve(cwd, flags.kubeconfig)];
  // kubectl skips KUBECONFIG entries that do not exist.
  const list = (io.env.KUBECONFIG ?? '').split(':').filter((p) => p !== '');
  if (list.length > 0) return list.map((p) => resolve(cwd, p)).filter((p) => existsSync(p));
  const home = io.env.HOME;
  if (home && existsSync(join(home, '.kube', 'config'))) return [join(home, '.kube', 'config')];
  return [];
}

/**
 * Resolves the connection settings.
 * @throws CliError when no configuration is found or it cannot be used (message says why)
 */
async function resolveConnection(flags: ConnectionFlags, io: Io): Promise<KubeClientConfig> {
  const files = kubeconfigFiles(flags, io);
  if (files.length === 0) {
    if (!io.env.KUBERNETES_SERVICE_HOST)
      throw new CliError(
        'no kubeconfig found: pass --kubeconfig FILE, set KUBECONFIG, or create ~/.kube/config',
      );
    try {
      return inClusterConfig(io.env);
    } catch (error) {
      throw new CliError(`in-cluster configuration: ${(error as Error).message}`);
    }
  }
  // Loaded lazily: @kubernetes/client-node costs ~400 ms to import; --help skips it.
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  try {
    const loaded = files.map((file) => {
      const one = new KubeConfig();
      one.loadFromFile(file);
      return one;
    });
    kc.loadFromOptions(mergeFirstWins(loaded));
  } catch (error) {
    throw new CliError(`cannot load kubeconfig ${files.join(':')}: ${(error as Error).message}`);
  }
  const contexts = kc.contexts.map((c) => c.name).join(', ') || 'none';
  if (flags.context) {
    // client-node's setCurrentContext accepts any name; the failure would surface later as "no cluster".
    if (!kc.getContextObject(flags.context))
      throw new CliError(
        `context ${JSON.stringify(flags.context)} is not found in kubeconfig ${files.join(':')} (contexts: ${contexts})`,
      );
    kc.setCurrentContext(flags.context);
  } else {
    // As kubectl: no current-context (or one naming no context) is an error naming it — without
    // this, client-node finds no cluster and the message blamed the cluster's server.
    if (kc.currentContext === '')
      throw new CliError(
        `kubeconfig ${files.join(':')} sets no current-context: pass --context NAME or run "kubectl config use-context NAME" (contexts: ${contexts})`,
      );
    if (!kc.getContextObject(kc.currentContext))
      throw new CliError(
        `kubeconfig ${files.join(':')}: current-context ${JSON.stringify(kc.currentContext)} is not one of its contexts (${contexts})`,
      );
  }
  return toClientConfig(kc, files.join(':'));
}

/**
 * Merges kubeconfigs the way kubectl does for a KUBECONFIG list: the first file that sets the
 * current context wins, and for each cluster / user / context name the first definition wins
 * (client-node's own mergeConfig throws on duplicate names instead).
 */
function mergeFirstWins(configs: readonly KubeConfig[]): Parameters<KubeConfig['loadFromOptions']>[0] {
  const firstByName = <T extends { name: string }>(lists: T[][]): T[] => {
    const seen = new Map<string, T>();
    for (const item of lists.flat()) if (!seen.has(item.name)) seen.set(item.name, item);
    return [...seen.values()];
  };
  return {
    clusters: firstByName(configs.map((c) => c.clusters)),
    users: firstByName(configs.map((c) => c.users)),
    contexts: firstByName(configs.map((c) => c.contexts)),
    currentContext: configs.map((c) => c.currentContext).find((name) => name !== '') ?? '',
  };
}

async function toClientConfig(kc: KubeConfig, source: string): Promise<KubeClientConfig> {
  const cluster = kc.getCurrentCluster();
  if (!cluster?.server) throw new CliError(`kubeconfig ${source}: the current context has no cluster server`);
  const serverProblem = kubeServerProblem(cluster.server);
  if (serverProblem)
    throw new CliError(`kubeconfig ${source}: cluster ${cluster.name} server ${serverProblem}`);
  const opts: {
    ca?: unknown;
    cert?: unknown;
    key?: unknown;
    auth?: string;
    headers?: Record<string, unknown>;
  } = {};
  try {
    await kc.applyToHTTPSOptions(opts);
  } catch (error) {
    // an exec credential plugin that fails (`command: /bin/false`) throws with an empty message
    const why =
      error instanceof Error && error.message !== ''
        ? error.message
        : `${String(error)} (no message; an exec credential plugin that failed?)`;
    throw new CliError(`kubeconfig ${source}: cannot get credentials: ${why}`);
  }
  if (opts.auth) throw new CliError(`kubeconfig ${source}: basic authentication is not supported`);
  const authorization = opts.headers?.Authorization;
  const token = typeof authorization === 'string' ? authorization.replace(/^Bearer\s+/i, '') : undefined;
  const config: KubeClientConfig = { server: cluster.server.replace(/\/+$/, '') };
  for (const field of ['ca', 'cert', 'key'] as const) {
    const value = opts[field];
    if (typeof value === 'string' || Buffer.isBuffer(value)) config[field] = Buffer.from(value);
  }
  if (token) config.token = token;
  if (cluster.skipTLSVerify) config.insecureSkipTLSVerify = true;
  const problem = tlsMaterialProblem(config, `kubeconfig ${source}`);
  if (problem) throw new CliError(problem);
  return config;
}

// 30 s: one LIST of thousands of blocks takes a few seconds on a small API server.
export const DEFAULT_REQUEST_TIMEOUT_S = 30;
// 1 day: far beyond any request; keeps the timer within Node's limit (2^31 − 1 ms ≈ 24.8 days).
export const MAX_REQUEST_TIMEOUT_S = 86400;

/** An open connection: the datastore (its `transport` also serves raw requests) and the server URL. */
export interface Connection {
  readonly ds: KubeDatastore;
  readonly server: string;
}

/** Connects. The caller closes `ds` (idle keep-alive sockets would keep the process alive). */
export async function connect(flags: ConnectionFlags, io: Io): Promise<Connection> {
  const config = await resolveConnection(flags, io);
  const transport = new KubeTransport(config, {
    timeoutMs: (flags.requestTimeout ?? DEFAULT_REQUEST_TIMEOUT_S) * 1000,
  });
  return { ds: new KubeDatastore(transport), server: config.server };
}

/** The cluster's identity: the server URL and the kube-system namespace UID. */
export interface ClusterIdentity {
  server: string;
  kubeSystemUID: string;
}

/**
 * Reads the cluster identity (1 GET). kube-system exists in every cluster and its UID never
 * changes, so two reports with the same UID come from the same cluster (calicoctl uses its
 * ClusterInformation GUID the same way).
 * @throws CliError when kube-system is missing; transport errors propagate
 */
export async function clusterIdentity(conn: Connection): Promise<ClusterIdentity> {
  const ns = await conn.ds.getNamespace('kube-system');
  if (!ns?.metadata.uid)
    throw new CliError('the cluster has no kube-system namespace: cannot tell which cluster this is');
  return { server: conn.server, kubeSystemUID: ns.metadata.uid };
}
