/**
 * The uninstall signal's confirmation at shutdown (docs/design-agent.md §Uninstall), when no
 * event said the agent's DaemonSet went (its watch was reconnecting at that moment). One GET of
 * the DaemonSet: 404 → gone; there → not gone. But `helm uninstall` deletes the agent's Role and
 * ServiceAccount a moment after the DaemonSet, so that GET is then refused (403, or 401 once the
 * ServiceAccount is gone) — as it is under a mere credential problem of the agent (a Role edited
 * by hand, a token the API server no longer accepts), which must never remove the node's CNI.
 * Told apart by a second credential of the same release that shares nothing with the agent's:
 * the plugin's (its own ServiceAccount, a token bound to the Node). Refused too (401) → the
 * release's ServiceAccounts are gone → an uninstall. Accepted → the agent's credential alone is
 * at fault → not gone.
 */
import { isApiError, isNotFound } from 'blockipam/core';
import { KubeTransport } from 'blockipam/core/kube';
import { loadKubeconfig } from 'blockipam/core/kubeconfig';

/** The answer to the agent's GET of its DaemonSet. */
export type OwnerAnswer = 'present' | 'notFound' | 'refused' | 'error';
/** The answer to the plugin's credential (a SelfSubjectReview: any authenticated user may ask). */
export type CredentialAnswer = 'accepted' | 'refused' | 'error';
/** What one attempt decides: gone, not gone, or ask again (an answer still in flux). */
export type Verdict = 'gone' | 'stay' | 'again';

/**
 * One attempt's verdict (pure). 404 → gone; the DaemonSet there or an error that is no refusal
 * → stay; the agent refused (401/403) and the plugin's credential refused (401) → gone; the
 * plugin's accepted or unknown, or no plugin credential → again while `last` is false, else stay.
 * @param plugin the plugin credential's answer; undefined when the agent has none (no install)
 * @param last true on the last attempt
 */
export function shutdownVerdict(
  owner: OwnerAnswer,
  plugin: CredentialAnswer | undefined,
  last: boolean,
): Verdict {
  if (owner === 'notFound') return 'gone';
  if (owner !== 'refused') return 'stay';
  if (plugin === 'refused') return 'gone';
  // the release's deletions are a moment apart, and a token review may be cached for seconds
  return last || plugin === undefined ? 'stay' : 'again';
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
    const refused = isApiError(error) && (error.status === 401 || error.status === 403);
    return { answer: refused ? 'refused' : 'error', error };
  }
}

// 5 s per request: the shutdown has the pod's grace period (the chart's: 30 s) for everything.
const PROBE_TIMEOUT_MS = 5_000;

/**
 * Whether the API server accepts the credential in the kubeconfig at `path` (the plugin's, as
 * the installer wrote it): a SelfSubjectReview, which needs no RBAC. 401 → refused; an answer →
 * accepted; no kubeconfig, no answer or anything else → error.
 */
export async function credentialAnswer(path: string): Promise<CredentialAnswer> {
  let transport: KubeTransport;
  try {
    transport = new KubeTransport(loadKubeconfig(path), { timeoutMs: PROBE_TIMEOUT_MS });
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
