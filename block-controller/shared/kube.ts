/**
 * The daemons' connection to the API server, two clients over one set of credentials:
 * - @kubernetes/client-node's KubeConfig, for watches (informers: ./informer.ts);
 * - core's KubeTransport + KubeDatastore, for every LIST and every write, so the daemons send
 *   exactly the compare-and-swap requests the plugin and ipamctl send.
 *
 * Sources: `kubeconfig` (a file: token, tokenFile or client certificate; exec plugins are not
 * supported by core's loader) or, without it, the pod's service account (in-cluster).
 * `apiServer` overrides the server URL of either, for clusters without kube-proxy where the
 * `kubernetes` Service address does not work (as Cilium's k8sServiceHost/k8sServicePort).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeDatastore, KubeTransport, kubeServerProblem } from 'blockipam/core/kube';
import { inClusterConfig, loadKubeconfig, SERVICE_ACCOUNT_DIR } from 'blockipam/core/kubeconfig';
import type { KubeClientConfig } from 'blockipam/core/kube';

export interface KubeConnectionOptions {
  /** Path of a kubeconfig file; absent = in-cluster service account. */
  kubeconfig?: string;
  /** Context of the kubeconfig; default its current-context. */
  context?: string;
  /** Server URL override, e.g. "https://10.99.0.1:6443" (no trailing slash needed). */
  apiServer?: string;
  /** Per-request timeout of the transport, ms; default core's 30 000. */
  requestTimeoutMs?: number;
  /** Environment for the in-cluster variables; default process.env. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Service-account directory (ca.crt, token); default the pod's. */
  serviceAccountDir?: string;
}

export interface KubeConnection {
  /** client-node's configuration, for watches. */
  readonly kubeConfig: KubeConfig;
  /** core's transport: raw requests (LISTs for informers, TokenRequest, ...). */
  readonly transport: KubeTransport;
  /** core's compare-and-swap datastore over `transport`: every IPAM write goes here. */
  readonly datastore: KubeDatastore;
  /** The server URL both clients use. */
  readonly server: string;
  /** core's resolved settings (server, CA, credentials), e.g. for a kubeconfig written for the plugin. */
  readonly clientConfig: KubeClientConfig;
  /** Closes the transport's keep-alive connections. */
  close(): void;
}

/**
 * Builds both clients.
 * @throws KubeconfigError (core) when the kubeconfig or the service account cannot be used;
 *   Error naming `apiServer` when the override is not an http(s) URL
 */
export function connectKube(options: KubeConnectionOptions = {}): KubeConnection {
  const server = options.apiServer === undefined ? undefined : checkedServer(options.apiServer);
  const { core, kubeConfig } =
    options.kubeconfig === undefined ? inCluster(options, server) : fromFile(options.kubeconfig, options);
  const config: KubeClientConfig = server === undefined ? core : { ...core, server };
  if (server !== undefined) overrideServer(kubeConfig, server);
  const transport = new KubeTransport(
    config,
    options.requestTimeoutMs === undefined ? {} : { timeoutMs: options.requestTimeoutMs },
  );
  return {
    kubeConfig,
    transport,
    datastore: new KubeDatastore(transport),
    server: config.server,
    clientConfig: config,
    close: () => transport.close(),
  };
}

function fromFile(
  path: string,
  options: KubeConnectionOptions,
): { core: KubeClientConfig; kubeConfig: KubeConfig } {
  const core = loadKubeconfig(path, options.context === undefined ? {} : { context: options.context });
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(path);
  if (options.context !== undefined) kubeConfig.setCurrentContext(options.context);
  return { core, kubeConfig };
}

function inCluster(
  options: KubeConnectionOptions,
  server: string | undefined,
): { core: KubeClientConfig; kubeConfig: KubeConfig } {
  const dir = options.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  // With an override the Service variables are not needed (and may point at an unusable address).
  const core: KubeClientConfig =
    server === undefined
      ? inClusterConfig(options.env ?? process.env, dir)
      : { server, ca: readFileSync(join(dir, 'ca.crt')), tokenFile: join(dir, 'token') };
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromClusterAndUser(
    { name: 'in-cluster', server: core.server, caFile: join(dir, 'ca.crt'), skipTLSVerify: false },
    // client-node's tokenFile provider re-reads the file as the kubelet rotates the token.
    {
      name: 'service-account',
      authProvider: { name: 'tokenFile', config: { tokenFile: join(dir, 'token') } },
    },
  );
  return { core, kubeConfig };
}

function overrideServer(kubeConfig: KubeConfig, server: string): void {
  const current = kubeConfig.getCurrentCluster();
  kubeConfig.loadFromOptions({
    clusters: kubeConfig.clusters.map((c) => (c.name === current?.name ? { ...c, server } : c)),
    users: kubeConfig.users,
    contexts: kubeConfig.contexts,
    currentContext: kubeConfig.currentContext,
  });
}

/** The override without trailing slashes; the daemons' flag checks refused a non-URL at start. */
function checkedServer(value: string): string {
  const problem = kubeServerProblem(value);
  if (problem) throw new Error(`apiServer ${problem}`);
  return value.replace(/\/+$/, '');
}
