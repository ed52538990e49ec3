/**
 * Install mode (as Calico's install-cni): puts the plugin on the agent's host and keeps its
 * credential fresh. In order, so the runtime never finds a conflist whose plugin cannot run:
 * 1. the plugin executables ({@link installExecutables}): with a native forwarder, the TypeScript
 *    executable → `<cniBinDir>/blockipam-direct` first, then the forwarder → `<cniBinDir>/blockipam`;
 *    without one, the TypeScript executable → `<cniBinDir>/blockipam` (0755; each skipped when the
 *    content is equal);
 * 2. a token of the plugin's ServiceAccount bound to this Node (token.ts) → the plugin's
 *    kubeconfig (0600: it holds the token);
 * 3. the conflist (conflist.ts) → `<cniConfDir>/<conflistName>` (0644).
 * With `conflist.hostLocalStore` (adopting the node from host-local) the conflist is written only
 * once {@link CniInstaller.adoption} says the node is opted in, and removed again when it is not
 * (a rollback: the runtime goes back to host-local's conflist).
 * Every file is replaced atomically (files.ts). Then the token is re-requested at half its
 * lifetime (token.ts refreshAtMs) and the kubeconfig rewritten; a failed refresh is retried every
 * 10 s while the old token is still valid. The Node's uid is looked up at every request; when the
 * watched Node comes back with another uid (deleted and registered again: the API server revoked
 * the token), {@link CniInstaller.nodeSeen} refreshes at once instead of at the next schedule.
 */
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { KubeTransport } from 'blockipam/core/kube';
import { errorFields, F } from '../../shared/index.ts';
import type { Logger } from '../../shared/index.ts';
import { copyFileAtomic, MODE_EXECUTABLE, MODE_PUBLIC, MODE_SECRET, writeFileAtomic } from '../files.ts';
import type { AgentMetrics } from '../metrics.ts';
import { conflistFor } from './conflist.ts';
import type { ConflistOptions } from './conflist.ts';
import { nodeUid, refreshAtMs, requestToken } from './token.ts';
import type { IssuedToken, TokenSpec } from './token.ts';

export interface InstallOptions {
  /** Where the runtime looks for plugins, e.g. /opt/cni/bin. */
  readonly cniBinDir: string;
  /** The plugin executable to copy; undefined = do not copy (installed some other way). */
  readonly pluginBinary?: string;
  /**
   * The native forwarder to install as the plugin, with `pluginBinary` beside it as its direct
   * path (docs/design-plugin.md §"Start-up"); undefined = `pluginBinary` is the plugin itself.
   */
  readonly forwarderBinary?: string;
  /** Where the runtime looks for network configurations, e.g. /etc/cni/net.d. */
  readonly cniConfDir: string;
  /** File name of the conflist, e.g. 10-blockipam.conflist (lowest name wins in containerd). */
  readonly conflistName: string;
  readonly conflist: Omit<ConflistOptions, 'kubeconfig'>;
  /** The plugin's kubeconfig path (absolute; the conflist names it). */
  readonly kubeconfigPath: string;
  /** API server URL the plugin uses (the host's view: no Service address without kube-proxy). */
  readonly pluginServer: string;
  /** PEM CA bundle of the API server, written into the kubeconfig. */
  readonly ca?: Buffer;
  readonly insecureSkipTLSVerify?: boolean;
  readonly token: TokenSpec;
  /** Refresh after this many ms instead of at half the lifetime (tests). */
  readonly tokenRefreshMs?: number;
}

// 10 s: a refresh that failed (API server briefly away) is retried soon; the token in place
// still has half its lifetime (≥ 5 min) left.
const RETRY_MS = 10_000;
/** The plugin executable's name in the CNI bin dir (netconf `ipam.type`). */
export const PLUGIN_NAME = 'blockipam';
/** The TypeScript executable's name beside the forwarder (the forwarder execs it: its direct path). */
const DIRECT_NAME = 'blockipam-direct';

/**
 * Installs the plugin into `cniBinDir`, each file copied atomically, 0755:
 * - with `forwarderBinary`: `pluginBinary` as {@link DIRECT_NAME} first, then the forwarder as
 *   {@link PLUGIN_NAME} — so a forwarder in place always finds its direct path beside it;
 * - without: `pluginBinary` as {@link PLUGIN_NAME}, then a {@link DIRECT_NAME} left by an
 *   install with a forwarder is removed (after: a forwarder still running finds it until the
 *   TypeScript executable has replaced it).
 * @returns the paths written or found equal, with whether each was copied
 * @throws the fs error (a copy that failed leaves the file before it as it was)
 */
export async function installExecutables(o: {
  readonly cniBinDir: string;
  readonly pluginBinary: string;
  readonly forwarderBinary?: string;
}): Promise<{ readonly path: string; readonly copied: boolean }[]> {
  const plugin = join(o.cniBinDir, PLUGIN_NAME);
  const direct = join(o.cniBinDir, DIRECT_NAME);
  if (o.forwarderBinary === undefined) {
    const copied = await copyFileAtomic(o.pluginBinary, plugin, MODE_EXECUTABLE);
    await rm(direct, { force: true });
    return [{ path: plugin, copied }];
  }
  const directCopied = await copyFileAtomic(o.pluginBinary, direct, MODE_EXECUTABLE);
  const copied = await copyFileAtomic(o.forwarderBinary, plugin, MODE_EXECUTABLE);
  return [
    { path: direct, copied: directCopied },
    { path: plugin, copied },
  ];
}

export class CniInstaller {
  readonly #o: InstallOptions;
  readonly #transport: KubeTransport;
  readonly #log: Logger;
  readonly #metrics: AgentMetrics;
  readonly #node: string;
  #timer: NodeJS.Timeout | undefined;
  #token: IssuedToken | undefined;
  #stopped = false;
  #uninstalled = false;
  /** The install or refresh in progress (uninstall waits for it, so nothing is written after). */
  #busy: Promise<unknown> = Promise.resolve();
  /** The Node uid a refresh was last brought forward for ({@link nodeSeen}). */
  #rebindFor: string | undefined;
  /** With `conflist.hostLocalStore`: whether the node is opted in (undefined: not known yet). */
  #adopting: boolean | undefined;

  constructor(
    options: InstallOptions,
    deps: { transport: KubeTransport; log: Logger; metrics: AgentMetrics; node: string },
  ) {
    this.#o = options;
    this.#transport = deps.transport;
    this.#log = deps.log;
    this.#metrics = deps.metrics;
    this.#node = deps.node;
  }

  /** The token currently written (undefined before install). */
  get token(): IssuedToken | undefined {
    return this.#token;
  }

  /**
   * Installs the three files once.
   * @throws the fs or API error (nothing after the failing step is written)
   */
  install(): Promise<void> {
    return this.#serial(() => this.#install());
  }

  async #install(): Promise<void> {
    const o = this.#o;
    if (this.#uninstalled) return;
    if (o.pluginBinary !== undefined) {
      for (const { path, copied } of await installExecutables({ ...o, pluginBinary: o.pluginBinary }))
        this.#log.info(copied ? 'plugin installed' : 'plugin already installed', { [F.path]: path });
    }
    await this.#refresh();
    if (this.#uninstalled) return;
    if (o.conflist.hostLocalStore !== undefined && this.#adopting !== true) {
      this.#log.info('conflist held back: the node is not opted in to adoption', {
        [F.node]: this.#node,
        store: o.conflist.hostLocalStore,
      });
      return;
    }
    await this.#writeConflist();
  }

  async #writeConflist(): Promise<void> {
    const o = this.#o;
    const conflist = join(o.cniConfDir, o.conflistName);
    const document = conflistFor({ ...o.conflist, kubeconfig: o.kubeconfigPath });
    await writeFileAtomic(conflist, `${JSON.stringify(document, null, 2)}\n`, MODE_PUBLIC);
    this.#log.info('conflist written', { [F.path]: conflist });
  }

  /**
   * With `conflist.hostLocalStore`: the node's opt-in as last seen on its Node. Opted in: the
   * conflist is written (with `ipam.hostLocalStore`); no longer opted in: it is removed, and the
   * runtime goes back to the next conflist by name (host-local's) — unless the conflist in place
   * was written outside adoption mode (no `ipam.hostLocalStore`: blockipam served the node before),
   * which is kept. Without `conflist.hostLocalStore`: nothing.
   * @throws the fs error (retried at the next call with the same answer: the state is kept only
   *   once the file is written or removed)
   */
  adoption(optedIn: boolean): Promise<void> {
    if (this.#o.conflist.hostLocalStore === undefined || optedIn === this.#adopting) return Promise.resolve();
    return this.#serial(async () => {
      if (this.#uninstalled || optedIn === this.#adopting) return;
      const conflist = join(this.#o.cniConfDir, this.#o.conflistName);
      if (optedIn) {
        await this.#writeConflist();
        this.#log.info('node opted in to adoption: blockipam serves its new pods', { [F.node]: this.#node });
      } else if ((await writtenOutsideAdoption(conflist)) === true) {
        // blockipam served this node before adoption mode was turned on: removing the conflist
        // would hand its new pods to host-local, which knows none of blockipam's addresses
        this.#log.warn(
          'conflist written outside adoption mode: kept, and the node stays served by blockipam (label it blockipam.io/adopt=true, or turn adoption mode off)',
          { [F.node]: this.#node, [F.path]: conflist },
        );
      } else {
        await rm(conflist, { force: true });
        if (this.#adopting === true)
          this.#log.warn(
            'node no longer opted in to adoption: conflist removed, host-local serves its new pods',
            {
              [F.node]: this.#node,
              [F.path]: conflist,
            },
          );
      }
      this.#adopting = optedIn;
    });
  }

  /** Keeps the token fresh until {@link stop}. Call after {@link install}. */
  start(): void {
    this.#schedule(this.#token ? refreshAtMs(this.#token, this.#o.tokenRefreshMs) - Date.now() : 0);
  }

  /**
   * The watched Node object's uid (undefined: not seen). A uid other than the token's means the
   * Node was deleted and registered again, which revoked the token: refresh now.
   */
  nodeSeen(uid: string | undefined): void {
    if (this.#timer === undefined || uid === undefined || this.#token === undefined) return;
    // once per new uid: Node status updates arrive every few seconds, a failed refresh retries
    if (uid === this.#token.nodeUid || uid === this.#rebindFor) return;
    this.#rebindFor = uid;
    this.#log.info('node registered again; refreshing the plugin token', { [F.node]: this.#node });
    this.#schedule(0);
  }

  /** Stops the token refresh; every file stays (a restart or rollout: the node keeps its CNI). */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  /**
   * Uninstall (the agent's DaemonSet is gone): stops, waits for an install or refresh in
   * progress, then removes the conflist — the runtime falls back to the next network
   * configuration in `cniConfDir`, if any — and then the plugin's kubeconfig (its token dies with
   * the release). The plugin executable stays (a runtime may still run a DEL of it). Idempotent;
   * a missing file is not an error.
   * @throws the fs error of a removal that failed (the file then stays)
   */
  async uninstall(): Promise<void> {
    this.stop();
    if (this.#uninstalled) return;
    this.#uninstalled = true;
    await this.#busy.catch(() => undefined);
    const conflist = join(this.#o.cniConfDir, this.#o.conflistName);
    await rm(conflist, { force: true });
    await rm(this.#o.kubeconfigPath, { force: true });
    this.#log.info('conflist and plugin kubeconfig removed', {
      [F.path]: conflist,
      kubeconfig: this.#o.kubeconfigPath,
    });
  }

  /**
   * The agent's DaemonSet is back after an {@link uninstall} (a new one of the same name): allows
   * {@link install} and {@link start} again. Call after the uninstall settled.
   */
  resume(): void {
    this.#uninstalled = false;
    this.#stopped = false;
  }

  /** True once {@link uninstall} began (until {@link resume}). */
  get uninstalled(): boolean {
    return this.#uninstalled;
  }

  /** Runs `work` after the install or refresh in progress, and records it as in progress. */
  #serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#busy.catch(() => undefined).then(work);
    this.#busy = run;
    return run;
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(
      () => {
        this.#serial(() => this.#refresh()).then(
          () => this.start(),
          (error: unknown) => {
            this.#log.error('token refresh failed; retrying', {
              [F.durationMs]: RETRY_MS,
              ...errorFields(error),
            });
            this.#schedule(RETRY_MS);
          },
        );
      },
      Math.max(0, delayMs),
    );
  }

  async #refresh(): Promise<void> {
    let token: IssuedToken;
    try {
      token = await requestToken(
        this.#transport,
        this.#o.token,
        await nodeUid(this.#transport, this.#o.token.node),
      );
    } catch (error) {
      this.#metrics.tokenRefreshes.inc({ node: this.#node, result: 'error' });
      this.#metrics.apiErrors.inc({ operation: 'token', reason: (error as Error).name ?? 'Error' });
      throw error;
    }
    if (this.#uninstalled) return;
    await writeFileAtomic(this.#o.kubeconfigPath, this.#kubeconfig(token.token), MODE_SECRET);
    this.#token = token;
    this.#metrics.tokenRefreshes.inc({ node: this.#node, result: 'ok' });
    this.#log.info('plugin kubeconfig written', {
      [F.path]: this.#o.kubeconfigPath,
      expiresAt: new Date(token.expiresAtMs).toISOString(),
    });
  }

  /** The kubeconfig (JSON, which is YAML) for the plugin: one cluster, one token user. */
  #kubeconfig(token: string): string {
    const cluster: Record<string, unknown> = { server: this.#o.pluginServer };
    if (this.#o.ca) cluster['certificate-authority-data'] = this.#o.ca.toString('base64');
    if (this.#o.insecureSkipTLSVerify) cluster['insecure-skip-tls-verify'] = true;
    const doc = {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'blockipam', cluster }],
      users: [{ name: 'blockipam-plugin', user: { token } }],
      contexts: [{ name: 'blockipam', context: { cluster: 'blockipam', user: 'blockipam-plugin' } }],
      'current-context': 'blockipam',
    };
    return `${JSON.stringify(doc, null, 2)}\n`;
  }
}

/**
 * Whether the conflist at `path` was written outside adoption mode: true when its ipam section
 * has no `hostLocalStore`; false when it has; undefined when there is no readable conflist.
 */
async function writtenOutsideAdoption(path: string): Promise<boolean | undefined> {
  let document: { plugins?: { ipam?: Record<string, unknown> }[] };
  try {
    document = JSON.parse(await readFile(path, 'utf8')) as typeof document;
  } catch {
    return undefined;
  }
  const ipam = document.plugins?.find((p) => p.ipam?.type === 'blockipam')?.ipam;
  return ipam === undefined ? undefined : ipam.hostLocalStore === undefined;
}
