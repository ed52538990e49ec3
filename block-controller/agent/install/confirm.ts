/**
 * The uninstall signal's confirmation at shutdown (docs/design-agent.md §Uninstall), when no
 * event said the agent's DaemonSet went (its watch was reconnecting at that moment). One GET of
 * the DaemonSet: 404 → gone; there → not gone. But `helm uninstall` deletes the agent's Role and
 * ServiceAccount a moment after the DaemonSet, so that GET is then refused (403 while only the
 * Role is gone, 401 once the ServiceAccount is) — as it is under a mere credential problem of the
 * agent (a Role edited by hand, a token the API server no longer accepts), which must never
 * remove the node's CNI. Told apart by a second credential of the same release that shares
 * nothing with the agent's: the plugin's (its own ServiceAccount, a token bound to the Node).
 *
 * Gone only when both are refused as unknown (401: no authorisation problem explains it), the
 * plugin's token has not expired by its own `exp` claim (the agent refreshes it; an agent whose
 * credential failed long enough lets it lapse, and that 401 proves nothing), and the Node that
 * token is bound to is still the agent's Node: a Node deleted while its kubelet runs revokes the
 * plugin's token, and the pod garbage collector then deletes the agent's pod, revoking the
 * agent's — both 401 with the release in place. A 404 counts unless the DaemonSet last seen was
 * being deleted with `--cascade=orphan` (its pods kept: a selector change, never an uninstall). A signing key
 * rotated without keeping the old public key (which every service-account token of the cluster
 * survives only by a restart) still reads as gone: the next agent start installs again.
 */
import { isApiError, isNotFound } from 'blockipam/core';
import { KubeTransport } from 'blockipam/core/kube';
import { loadKubeconfig } from 'blockipam/core/kubeconfig';

/**
 * The answer to the agent's GET of its DaemonSet: `unauthenticated` is a 401 (the credential
 * unknown: its ServiceAccount gone, or its token invalid), `forbidden` a 403 (an RBAC refusal).
 */
export type OwnerAnswer = 'present' | 'notFound' | 'unauthenticated' | 'forbidden' | 'error';
/**
 * The answer to the plugin's credential (a SelfSubjectReview: any authenticated user may ask);
 * `expired` when its token's `exp` claim has passed, `nodeGone` when the Node it is bound to was
 * deleted or registered again (neither asked: a 401 would prove nothing).
 */
export type CredentialAnswer = 'accepted' | 'refused' | 'expired' | 'nodeGone' | 'error';
/** What one attempt decides: gone, not gone, or ask again (an answer still in flux). */
export type Verdict = 'gone' | 'stay' | 'again';

/**
 * One attempt's verdict (pure). 404 → gone, unless `orphaned`; the DaemonSet there or an error
 * that is no refusal → stay; the agent unauthenticated (401) and the plugin's credential refused
 * (401) → gone; the plugin's token expired or its Node gone → stay at once (nothing will change
 * that); the agent forbidden (403: its Role may be going first), the plugin's accepted or unknown
 * → again while `last` is false, else stay; no plugin credential → stay.
 * @param plugin the plugin credential's answer; undefined when the agent has none (no install)
 * @param last true on the last attempt
 * @param orphaned true when the DaemonSet last seen was being deleted with `--cascade=orphan`
 */
export function shutdownVerdict(
  owner: OwnerAnswer,
  plugin: CredentialAnswer | undefined,
  last: boolean,
  orphaned = false,
): Verdict {
  if (owner === 'notFound') return orphaned ? 'stay' : 'gone';
  if (owner !== 'unauthenticated' && owner !== 'forbidden') return 'stay';
  if (plugin === undefined || plugin === 'expired' || plugin === 'nodeGone') return 'stay';
  if (owner === 'unauthenticated' && plugin === 'refused') return 'gone';
  // the release's deletions are a moment apart, and a token review may be cached for seconds
  return last ? 'stay' : 'again';
}

/** The agent's GET of `path` (its DaemonSet), classified. */
export async function ownerAnswer(
  transport: KubeTransport,
  path: string,
): Promise<{ answer: OwnerAnswer; error?: unknown }> {
  try {
    await transport.request('GET', path);
    return { answer: 'present' };
  } catch (error) {
    if (isNotFound(error)) return { answer: 'notFound' };
    if (isApiError(error) && error.status === 401) return { answer: 'unauthenticated', error };
    if (isApiError(error) && error.status === 403) return { answer: 'forbidden', error };
    return { answer: 'error', error };
  }
}

// 5 s per request: the shutdown has the pod's grace period (the chart's: 30 s) for everything.
const PROBE_TIMEOUT_MS = 5_000;

/**
 * The `exp` claim of a JSON Web Token (a service-account token), ms since epoch; undefined when
 * `token` is no JWT or has no numeric `exp` (read, not verified: only the API server verifies).
 */
export function tokenExpiryMs(token: string): number | undefined {
  const payload = token.split('.')[1];
  if (payload === undefined || payload === '') return undefined;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { exp?: unknown };
    return typeof claims.exp === 'number' && Number.isFinite(claims.exp) ? claims.exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether the API server accepts the credential in the kubeconfig at `path` (the plugin's, as
 * the installer wrote it): a SelfSubjectReview, which needs no RBAC. Its token's `exp` passed at
 * `nowMs` → expired (not asked); 401 → refused; an answer → accepted; no kubeconfig, no answer or
 * anything else → error.
 */
export async function credentialAnswer(path: string, nowMs = Date.now()): Promise<CredentialAnswer> {
  let transport: KubeTransport;
  try {
    const config = loadKubeconfig(path);
    const expiry = config.token === undefined ? undefined : tokenExpiryMs(config.token);
    if (expiry !== undefined && expiry <= nowMs) return 'expired';
    transport = new KubeTransport(config, { timeoutMs: PROBE_TIMEOUT_MS });
  } catch {
    return 'error';
  }
  try {
    await transport.request('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });
    return 'accepted';
  } catch (error) {
    return isApiError(error) && error.status === 401 ? 'refused' : 'error';
  } finally {
    transport.close();
  }
}
