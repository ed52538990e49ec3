/**
 * The uninstall signal (docs/design-agent.md §Uninstall): the agent's own DaemonSet deleted
 * together with its pods. `helm uninstall` deletes the DaemonSet (background propagation) before
 * anything else of the agent's (Helm deletes workloads before RBAC and ServiceAccounts), and the
 * agent's watch of it — authorised when it was opened — streams the deletion; a restart, a
 * rollout, a crash, a drain or a node reboot leaves the DaemonSet in place. So "the DaemonSet is
 * deleted with its pods" tells an uninstall from a restart, with no hook and no state on the node.
 *
 * Watched by name (field selector `metadata.name`, which RBAC's `resourceNames` admits for list
 * and watch) in the agent's namespace. Gone means: a delete event (also one a re-LIST derives
 * when the object vanished) or an object with `metadata.deletionTimestamp` (foreground deletion)
 * — unless that DaemonSet (by uid) carries the `orphan` finalizer: `--cascade=orphan` (a selector
 * change, `helm uninstall --cascade orphan`) keeps its pods, this agent among them, and is never
 * an uninstall. At shutdown, when no event said so: a GET answering 404 for a DaemonSet this
 * agent has seen and not seen orphaned, or 401 while the plugin's unexpired credential of the
 * same release is refused too and the Node its token is bound to is still the Node (the release's
 * ServiceAccounts gone, not the Node deleted while its kubelet runs) ({@link OwnerWatch.confirmGone},
 * confirm.ts). Nothing else — not an error, not a 401 or 403 of the agent's credential alone, not
 * a DaemonSet never seen (a wrong name must not turn every restart into an uninstall) — counts.
 *
 * The signal is not a latch: a DaemonSet of the name seen again after it went — live, with
 * another uid (`helm uninstall` then `helm install` while this agent still runs) — is "back"
 * ({@link OwnerWatchOptions.onBack}), and the agent installs again (docs/design-agent.md §Uninstall).
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
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    deletionTimestamp?: string;
    finalizers?: readonly string[];
  };
}

/**
 * The finalizer the API server sets on an object deleted with `propagationPolicy: Orphan`
 * (`kubectl delete --cascade=orphan`); the garbage collector removes it once the dependents
 * (the agent pods) no longer name the object as their owner.
 */
const ORPHAN_FINALIZER = 'orphan';

/**
 * What a watch event says of the owner (pure): `orphaning` when the object carries the
 * {@link ORPHAN_FINALIZER} (deleted, its pods kept: never an uninstall); `deleted` for a delete
 * event or an object carrying a deletionTimestamp (background or foreground deletion: its pods
 * go with it); else `live`. A delete event of a uid once seen `orphaning` is the end of that
 * orphaning deletion — the caller remembers the uid ({@link watchOwner}).
 */
export function ownerState(event: WatchEvent, object: OwnerObject): 'live' | 'orphaning' | 'deleted' {
  if (object.metadata.finalizers?.includes(ORPHAN_FINALIZER)) return 'orphaning';
  return event === 'delete' || object.metadata.deletionTimestamp ? 'deleted' : 'live';
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
  /**
   * At shutdown: true when the Node the plugin's token is bound to is not the agent's Node as
   * last watched (deleted, or registered again with another uid). Then the plugin's 401 is the
   * Node's doing and proves nothing (confirm.ts). Undefined: never.
   */
  readonly pluginNodeGone?: () => boolean;
  /** Attempts of the shutdown confirmation while the answers are in flux; default 15. */
  readonly confirmAttempts?: number;
  /** Waits ms between those attempts; default a real 1 s timer (tests inject one). */
  readonly sleep?: (ms: number) => Promise<void>;
}

// 15 × 1 s: helm deletes the Role and ServiceAccounts a moment after the DaemonSet, and the API
// server accepts a deleted ServiceAccount's token from its cache of successful reviews for up to
// 10 s (kube-apiserver's token success cache TTL); 15 s leaves half of the pod's 30 s grace
// period to the rest of the shutdown.
const CONFIRM_ATTEMPTS = 15;
const CONFIRM_INTERVAL_MS = 1_000;

export interface OwnerWatch {
  /** True while the DaemonSet is seen gone (false again once a new one is back). */
  readonly gone: boolean;
  /**
   * At shutdown, when no event said so: GETs the DaemonSet, if it was ever seen; 404 → gone
   * (onGone called) unless the DaemonSet last seen was being deleted with `--cascade=orphan`;
   * 401 while the plugin's unexpired credential is refused (401) too, its Node still the agent's
   * → gone; the agent refused alone (401/403) is asked again (up to `confirmAttempts`, 1 s
   * apart). Never seen, the DaemonSet there, any other error, the agent's credential refused
   * alone or the plugin's Node gone → not gone (a restart must never look like an uninstall).
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
  /** The uid of the DaemonSet last seen; of the last one seen deleted with `--cascade=orphan`. */
  let lastUid: string | undefined;
  let orphanedUid: string | undefined;
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
    metrics: options.metrics,
    onEvent: (event, object) => {
      if (object.metadata.name !== options.name) return;
      seen = true;
      const uid = object.metadata.uid;
      lastUid = uid;
      const state = ownerState(event, object);
      // a delete event of a uid seen orphaning ends that deletion (the garbage collector removed
      // the finalizer once the pods were orphaned), whatever the object it carries
      const orphaning =
        state === 'orphaning' || (uid !== undefined && uid === orphanedUid && state === 'deleted');
      if (orphaning) {
        if (event === 'delete')
          options.log.info('own DaemonSet gone after --cascade=orphan: not an uninstall', { ...where, uid });
        else if (uid !== orphanedUid)
          options.log.info('own DaemonSet deleted with --cascade=orphan: its pods stay, the conflist too', {
            ...where,
            uid,
          });
        orphanedUid = uid;
      } else if (state === 'deleted') markGone(event === 'delete' ? 'deleted' : 'deletion started', uid);
      else markBack(uid);
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
      const orphaned = lastUid !== undefined && lastUid === orphanedUid;
      const reason = await confirmAtShutdown(options, `${path}/${options.name}`, orphaned);
      if (reason) markGone(reason);
      return gone;
    },
    stop: () => watch.stop(),
  };
}

/** The reason the DaemonSet counts as gone at shutdown (confirm.ts), or undefined (logged why). */
async function confirmAtShutdown(
  options: OwnerWatchOptions,
  path: string,
  orphaned: boolean,
): Promise<string | undefined> {
  const attempts = Math.max(1, options.confirmAttempts ?? CONFIRM_ATTEMPTS);
  const sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  for (let attempt = 1; ; attempt += 1) {
    const { answer, error } = await ownerAnswer(options.connection.transport, path);
    const refused = answer === 'unauthenticated' || answer === 'forbidden';
    const plugin =
      !refused || options.pluginKubeconfig === undefined
        ? undefined
        : options.pluginNodeGone?.()
          ? 'nodeGone'
          : await credentialAnswer(options.pluginKubeconfig);
    const verdict = shutdownVerdict(answer, plugin, attempt >= attempts, orphaned);
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
    /**
     * The uid of the agent's Node as its watch last saw it (undefined: deleted, or not seen).
     * Compared at shutdown with the Node the plugin's token is bound to ({@link OwnerWatchOptions.pluginNodeGone}).
     */
    readonly nodeUid?: () => string | undefined;
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
    metrics: deps.metrics,
    onGone: () => next(uninstall),
    onBack: () => next(reinstall),
    pluginKubeconfig: deps.pluginKubeconfig,
    pluginNodeGone: deps.nodeUid && pluginNodeGone(installer, deps.nodeUid),
  });
  lifecycle.onStop('install', async () => {
    installer.stop();
    await order;
    if (await watch.confirmGone()) await uninstall();
    await watch.stop();
  });
}

/**
 * Whether the Node the plugin's token (as `installer` last wrote it) is bound to differs from the
 * agent's Node as watched now: deleted (`nodeUid` undefined) or registered again (another uid).
 * No token written → false (then the plugin's kubeconfig answers nothing anyway).
 */
function pluginNodeGone(installer: CniInstaller, nodeUid: () => string | undefined): () => boolean {
  return () => {
    const bound = installer.token?.nodeUid;
    return bound !== undefined && nodeUid() !== bound;
  };
}
