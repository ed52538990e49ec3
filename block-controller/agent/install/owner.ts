/**
 * The uninstall signal (docs/design-agent.md §Uninstall): the agent's own DaemonSet deleted.
 * `helm uninstall` deletes the DaemonSet before anything else of the agent's (Helm deletes
 * workloads before RBAC and ServiceAccounts), and the agent's watch of it — authorised when it
 * was opened — streams the deletion; a restart, a rollout, a crash, a drain or a node reboot
 * leaves the DaemonSet in place. So "the DaemonSet is gone" tells an uninstall from a restart,
 * with no hook and no state on the node.
 *
 * Watched by name (field selector `metadata.name`, which RBAC's `resourceNames` admits for list
 * and watch) in the agent's namespace. Gone means: a delete event (also one a re-LIST derives
 * when the object vanished), an object with `metadata.deletionTimestamp` (foreground deletion),
 * or at shutdown a GET answering 404 for a DaemonSet this agent has seen — or 401 while the
 * plugin's unexpired credential of the same release is refused too: the release's ServiceAccounts gone
 * ({@link OwnerWatch.confirmGone}, confirm.ts). Nothing else — not an error, not a 401 or 403 of
 * the agent's credential alone, not a DaemonSet never seen (a wrong name must not turn every
 * restart into an uninstall) — counts.
 *
 * The signal is not a latch: a DaemonSet of the name seen again after it went — live, with
 * another uid (`helm uninstall` then `helm install` while this agent still runs, a DaemonSet
 * deleted with `--cascade=orphan` and created again) — is "back" ({@link OwnerWatchOptions.onBack}),
 * and the agent installs again (docs/design-agent.md §Uninstall).
 */
import { errorFields, F, watchKind } from '../../shared/index.ts';
import type {
  DaemonMetrics,
  KubeConnection,
  Lifecycle,
  Logger,
  WatchedKind,
  WatchEvent,
} from '../../shared/index.ts';
import { credentialAnswer, ownerAnswer, shutdownVerdict } from './confirm.ts';
import type { CniInstaller } from './installer.ts';

/** The fields of a DaemonSet the signal reads. */
export interface OwnerObject {
  metadata: { name: string; namespace?: string; uid?: string; deletionTimestamp?: string };
}

/**
 * Whether a watch event says the owner is being deleted (pure).
 * @returns true for a delete event or an object carrying a deletionTimestamp
 */
export function ownerGone(event: WatchEvent, object: OwnerObject): boolean {
  return event === 'delete' || Boolean(object.metadata.deletionTimestamp);
}

export interface OwnerWatchOptions {
  /** The DaemonSet's namespace (the agent's own). */
  readonly namespace: string;
  /** The DaemonSet's name, e.g. `blockipam-agent`. */
  readonly name: string;
  readonly connection: KubeConnection;
  readonly log: Logger;
  readonly metrics?: DaemonMetrics;
  /** Called when the DaemonSet is seen gone (once per DaemonSet object); `reason` says how. */
  readonly onGone: (reason: string) => void;
  /**
   * Called when, after it went, a live DaemonSet of the name is seen with another uid (a new one:
   * reinstalled). Then the next deletion is news again. Default: nothing.
   */
  readonly onBack?: (uid: string) => void;
  /**
   * The plugin's kubeconfig (the installer's): asked at shutdown when the agent's GET of its
   * DaemonSet is refused (confirm.ts). Undefined: a refusal never confirms.
   */
  readonly pluginKubeconfig?: string;
  /** Attempts of the shutdown confirmation while the answers are in flux; default 10. */
  readonly confirmAttempts?: number;
  /** Waits ms between those attempts; default a real 1 s timer (tests inject one). */
  readonly sleep?: (ms: number) => Promise<void>;
}

// 10 × 1 s: helm deletes the Role and ServiceAccounts a moment after the DaemonSet, and the API
// server may accept a deleted ServiceAccount's token from its cache for a few seconds; 10 s
// leaves most of the pod's 30 s grace period to the rest of the shutdown.
const CONFIRM_ATTEMPTS = 10;
const CONFIRM_INTERVAL_MS = 1_000;

export interface OwnerWatch {
  /** True while the DaemonSet is seen gone (false again once a new one is back). */
  readonly gone: boolean;
  /**
   * At shutdown, when no event said so: GETs the DaemonSet, if it was ever seen; 404 → gone
   * (onGone called); 401 while the plugin's unexpired credential is refused (401) too → gone;
   * the agent refused alone (401/403) is asked again (up to `confirmAttempts`, 1 s apart). Never seen, the
   * DaemonSet there, any other error, or the agent's credential refused alone → not gone (a
   * restart must never look like an uninstall).
   */
  confirmGone(): Promise<boolean>;
  stop(): Promise<void>;
}

/** Starts the watch; resolves once its first LIST landed or failed (it retries then). */
export async function watchOwner(options: OwnerWatchOptions): Promise<OwnerWatch> {
  const path = `/apis/apps/v1/namespaces/${options.namespace}/daemonsets`;
  const where = { [F.resource]: `daemonset/${options.namespace}/${options.name}` };
  let gone = false;
  let seen = false;
  /** The uid of the DaemonSet last seen gone: only another uid is "back". */
  let goneUid: string | undefined;
  const markGone = (reason: string, uid?: string): void => {
    if (gone) return;
    gone = true;
    goneUid = uid;
    options.log.info('own DaemonSet deleted: uninstalling the CNI configuration', { ...where, reason });
    options.onGone(reason);
  };
  const markBack = (uid: string | undefined): void => {
    if (!gone || uid === undefined || uid === goneUid) return;
    gone = false;
    goneUid = undefined;
    options.log.info('own DaemonSet back: installing the CNI configuration again', { ...where, uid });
    options.onBack?.(uid);
  };
  const watch: WatchedKind<OwnerObject> = await watchKind<OwnerObject>({
    resource: 'daemonset',
    path,
    fieldSelector: `metadata.name=${options.name}`,
    kubeConfig: options.connection.kubeConfig,
    transport: options.connection.transport,
    log: options.log,
    ...(options.metrics ? { metrics: options.metrics } : {}),
    onEvent: (event, object) => {
      if (object.metadata.name !== options.name) return;
      seen = true;
      if (ownerGone(event, object))
        markGone(event === 'delete' ? 'deleted' : 'deletion started', object.metadata.uid);
      else markBack(object.metadata.uid);
    },
  });
  if (watch.synced && watch.get(options.name, options.namespace) === undefined)
    options.log.warn('own DaemonSet not found: the conflist stays when the agent is removed', where);
  return {
    get gone() {
      return gone;
    },
    async confirmGone() {
      if (gone || !seen) return gone;
      const reason = await confirmAtShutdown(options, `${path}/${options.name}`);
      if (reason) markGone(reason);
      return gone;
    },
    stop: () => watch.stop(),
  };
}

/** The reason the DaemonSet counts as gone at shutdown (confirm.ts), or undefined (logged why). */
async function confirmAtShutdown(options: OwnerWatchOptions, path: string): Promise<string | undefined> {
  const attempts = Math.max(1, options.confirmAttempts ?? CONFIRM_ATTEMPTS);
  const sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  for (let attempt = 1; ; attempt += 1) {
    const { answer, error } = await ownerAnswer(options.connection.transport, path);
    const plugin =
      (answer === 'unauthenticated' || answer === 'forbidden') && options.pluginKubeconfig !== undefined
        ? await credentialAnswer(options.pluginKubeconfig)
        : undefined;
    const verdict = shutdownVerdict(answer, plugin, attempt >= attempts);
    if (verdict === 'gone')
      return answer === 'notFound'
        ? 'not found at shutdown'
        : "refused at shutdown, and so is the plugin's credential: the release's ServiceAccounts are gone";
    if (verdict === 'stay') {
      if (answer !== 'present')
        options.log.warn('own DaemonSet unreadable at shutdown: the conflist stays', {
          [F.resource]: path,
          answer,
          ...(plugin ? { pluginCredential: plugin } : {}),
          ...(error === undefined ? {} : errorFields(error)),
        });
      return undefined;
    }
    await sleep(CONFIRM_INTERVAL_MS);
  }
}

/**
 * What else the uninstall signal removes besides the conflist (the masquerade table), and puts
 * back when the DaemonSet returns.
 */
export interface SignalFollower {
  /** What it is, for the log ("masquerade table"). */
  readonly what: string;
  /** Removes it for good (until {@link reinstall}); a failure is logged, the others still run. */
  uninstall(): Promise<void>;
  /** Puts it back (the DaemonSet returned). */
  reinstall(): Promise<void>;
}

/**
 * Wires the signal to the installer for the agent: `owner` undefined (no --owner-daemonset) →
 * the shutdown only stops the token refresh. Otherwise the DaemonSet's deletion removes the
 * conflist and the kubeconfig at once ({@link CniInstaller.uninstall}, tracked by the lifecycle)
 * and then each of `followers`; a new DaemonSet of the name seen afterwards installs them again
 * (`reinstall`: the installer's files, then the followers). Removals and installs run one after
 * another in the order of the events. At shutdown {@link OwnerWatch.confirmGone} decides; anything
 * else (a restart, a rollout) only stops the token refresh. A failure is logged.
 */
export async function followOwner(
  owner: { readonly name: string; readonly namespace: string } | undefined,
  deps: {
    readonly installer: CniInstaller;
    /** Installs the conflist again after {@link CniInstaller.resume} (the agent's retrying install). */
    readonly reinstall: () => Promise<void>;
    /** The plugin's kubeconfig, the second credential of the shutdown confirmation (confirm.ts). */
    readonly pluginKubeconfig?: string;
    readonly followers?: readonly SignalFollower[];
    readonly connection: KubeConnection;
    readonly log: Logger;
    readonly metrics?: DaemonMetrics;
    readonly lifecycle: Lifecycle;
  },
): Promise<void> {
  const { installer, log, lifecycle } = deps;
  const followers = deps.followers ?? [];
  if (owner === undefined) {
    lifecycle.onStop('install', () => installer.stop());
    return;
  }
  const uninstall = async (): Promise<void> => {
    await installer.uninstall().catch((error: unknown) => {
      log.error('removing the conflist failed', errorFields(error));
    });
    for (const f of followers)
      await f.uninstall().catch((error: unknown) => {
        log.error(`removing the ${f.what} failed`, errorFields(error));
      });
  };
  const reinstall = async (): Promise<void> => {
    installer.resume();
    await deps.reinstall();
    for (const f of followers)
      await f.reinstall().catch((error: unknown) => {
        log.error(`installing the ${f.what} again failed`, errorFields(error));
      });
  };
  // one after another, in the order of the events: a reinstall never overtakes the removal
  let order: Promise<void> = Promise.resolve();
  const next = (work: () => Promise<void>): void => {
    order = order.then(work);
    void lifecycle.track(order);
  };
  const watch = await watchOwner({
    ...owner,
    connection: deps.connection,
    log,
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
    onGone: () => next(uninstall),
    onBack: () => next(reinstall),
    ...(deps.pluginKubeconfig === undefined ? {} : { pluginKubeconfig: deps.pluginKubeconfig }),
  });
  lifecycle.onStop('install', async () => {
    installer.stop();
    await order;
    if (await watch.confirmGone()) await uninstall();
    await watch.stop();
  });
}
