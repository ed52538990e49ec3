/**
 * One rule for what kind of "no" the API server said (docs/design-plugin.md §Errors), used by the
 * node agent (the error kind it answers on its socket: core/node-ipam/errors.ts) and by the
 * plugin's direct path (its CNI error): the same refusal is labelled the same on both paths.
 * Decided on core's error kinds and the status, plus — for admission — the API server's own
 * words naming the policy, which are its documented format (kube-apiserver's validating policy
 * dispatcher: "ValidatingAdmissionPolicy '<policy>' with binding '<binding>' denied request:
 * <message>"; webhooks: `admission webhook "<name>" denied the request: <message>`).
 */
import { isApiError } from './api-error.ts';
import { boundMessage } from './bounded-message.ts';
import { isDecodeError } from './decode-error.ts';
import { isInvalid } from './invalid.ts';
import { isTlsError } from './tls-error.ts';

/**
 * - `admission`: an admission policy or webhook denied the request: HTTP 400, 403 or 422 (the
 *   statuses a policy's `reason` or a webhook gives a denial) whose Status message opens with the
 *   API server's denial phrase;
 * - `forbidden`: 403 from the authorizer (RBAC): the credential may not do this at all;
 * - `auth`: 401 (the credential is not accepted) or no TLS session (ours or the server's
 *   certificate);
 * - `apiRejected`: 422/400 from validation (the CRD schema), or a 2xx answer that is not JSON.
 */
type ApiRefusalKind = 'admission' | 'forbidden' | 'auth' | 'apiRejected';

export interface ApiRefusal {
  readonly kind: ApiRefusalKind;
  /**
   * What to tell the operator: a label (the status, the reason, the policy, what to check) and
   * the API server's message whole, bounded by {@link boundMessage} (never cut before it names
   * the field, node, pool or block).
   */
  readonly message: string;
  /** `admission` only: the policy (or webhook) that denied the request, e.g. "blockipam-node-blocks". */
  readonly policy?: string;
}

// The API server's denial phrases, at the start of its Status message: bare (a webhook; a policy
// whose reason is Invalid) or after NewForbidden's `<resource> ["<name>"] is forbidden: `. Anchored
// so that a phrase quoted inside another refusal (a schema error echoing a hostile value, a 5xx
// body) is not taken for a denial.
const DENIAL_HEAD = String.raw`^(?:(?:[A-Za-z0-9.-]+(?: "[^"]*")? is )?(?:forbidden|invalid): )?`;
const POLICY = new RegExp(
  `${DENIAL_HEAD}ValidatingAdmissionPolicy '([^']+)' with binding '[^']*' denied request`,
);
const WEBHOOK = new RegExp(`${DENIAL_HEAD}admission webhook "([^"]+)" denied the request`);
/** The statuses an admission denial comes with (a policy's reason Forbidden/Invalid/BadRequest; webhooks). */
const DENIAL_STATUSES: ReadonlySet<number> = new Set([400, 403, 422]);
/** The request and status core/kube's transport puts before the API server's message of an ApiError. */
const REQUEST_HEAD = /^[A-Z]+ \S+: HTTP \d+: /;

/**
 * The admission policy or webhook that denied a request, from the API server's Status message
 * (`message`: that message alone, or core/kube's `<METHOD> <path>: HTTP <status>: <message>`), or
 * undefined when the message does not open with a denial phrase.
 */
function deniedBy(message: string): { readonly kind: string; readonly name: string } | undefined {
  const text = message.replace(REQUEST_HEAD, '');
  const policy = POLICY.exec(text);
  if (policy?.[1]) return { kind: 'ValidatingAdmissionPolicy', name: policy[1] };
  const webhook = WEBHOOK.exec(text);
  return webhook?.[1] ? { kind: 'admission webhook', name: webhook[1] } : undefined;
}

/**
 * The refusal in a thrown API failure, or undefined when it is none of these kinds (unreachable,
 * 5xx, 404, 409 …: the caller's other rules decide). Pure; never throws.
 */
export function apiRefusalOf(e: unknown): ApiRefusal | undefined {
  if (!(e instanceof Error)) return undefined;
  const raw = e.message;
  const refusal = (kind: ApiRefusalKind, label: string | undefined, policy?: string): ApiRefusal => ({
    kind,
    message: boundMessage(label ? `${label}: ${raw}` : raw),
    ...(policy ? { policy } : {}),
  });
  if (isTlsError(e))
    // origin kubeconfig: our own TLS material unusable (the message names the item); server: the
    // server's certificate not trusted.
    return refusal(
      'auth',
      e.origin === 'kubeconfig'
        ? "TLS: the kubeconfig's own certificate, key or CA is unusable"
        : "TLS: the API server's certificate is not trusted (check the kubeconfig's certificate-authority-data and server name)",
    );
  if (isDecodeError(e)) return refusal('apiRejected', undefined); // its message names the request and the answer
  const status = isApiError(e) || isInvalid(e) ? e.status : undefined;
  if (status === undefined) return undefined;
  const reason = (e as { reason?: string }).reason;
  const http = `HTTP ${status}${reason ? ` ${reason}` : ''}`;
  const denier = DENIAL_STATUSES.has(status) ? deniedBy(raw) : undefined;
  if (denier)
    return refusal('admission', `${denier.kind} '${denier.name}' denied the request (${http})`, denier.name);
  if (isInvalid(e)) return refusal('apiRejected', `the API server rejected the request as invalid (${http})`);
  if (status === 401)
    return refusal(
      'auth',
      `credentials not accepted (${http}): check the kubeconfig's user (an expired or revoked token?)`,
    );
  if (status === 403)
    return refusal('forbidden', `permission denied (${http}): check the RBAC of the kubeconfig's user`);
  return undefined;
}
