/**
 * The plugin's credential: a bound service-account token from the TokenRequest API
 * (POST /api/v1/namespaces/{namespace}/serviceaccounts/{name}/token) of the plugin's own
 * ServiceAccount, bound to the agent's **Node** object (KEP-4193, ServiceAccountTokenNodeBinding:
 * Kubernetes ≥ 1.31). The token carries `authentication.kubernetes.io/node-name` and `node-uid`
 * (the per-node admission policies key on the name), outlives the agent's pod — an agent restart
 * or rollout leaves the plugin's credential valid — and is refused once the Node is deleted.
 * Bound to the pod instead, it would die with every agent restart (a CNI outage on each).
 */
import type { KubeTransport } from 'blockipam/core/kube';

export interface TokenSpec {
  readonly namespace: string;
  readonly serviceAccount: string;
  /** Audiences; empty = the API server's default (its own issuer). */
  readonly audiences: readonly string[];
  /** Requested lifetime, s. The API server refuses less than 600 and may shorten or extend it. */
  readonly expirationSeconds: number;
  /** The Node to bind the token to: the agent's own. */
  readonly node: string;
}

export interface IssuedToken {
  readonly token: string;
  /** ms since epoch, from the answer's status.expirationTimestamp. */
  readonly expiresAtMs: number;
  /** ms since epoch, the local clock when the answer arrived. */
  readonly issuedAtMs: number;
  /** The uid of the Node it is bound to (a Node deleted and registered again has a new one). */
  readonly nodeUid: string;
}

interface TokenRequestAnswer {
  status?: { token?: string; expirationTimestamp?: string };
}

/**
 * Requests a token bound to Node `spec.node` whose uid is `uid`.
 * @throws core's typed errors (NotFoundError: no such ServiceAccount or Node; ApiError 403: the
 *   agent may not create serviceaccounts/token, or the node-tokens admission policy refused a
 *   token not bound to the caller's own Node) and Error when the answer lacks a token
 */
export async function requestToken(
  transport: KubeTransport,
  spec: TokenSpec,
  uid: string,
  nowMs: number = Date.now(),
): Promise<IssuedToken> {
  const path = `/api/v1/namespaces/${encodeURIComponent(spec.namespace)}/serviceaccounts/${encodeURIComponent(spec.serviceAccount)}/token`;
  const answer = await transport.request<TokenRequestAnswer>('POST', path, {
    body: {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {
        audiences: spec.audiences.length > 0 ? [...spec.audiences] : null,
        expirationSeconds: spec.expirationSeconds,
        boundObjectRef: { kind: 'Node', apiVersion: 'v1', name: spec.node, uid },
      },
    },
  });
  const token = answer.status?.token;
  const expiresAtMs = Date.parse(answer.status?.expirationTimestamp ?? '');
  if (!token || !Number.isFinite(expiresAtMs))
    throw new Error(
      `TokenRequest for ${spec.namespace}/${spec.serviceAccount}: the answer has no token or expiry`,
    );
  return { token, expiresAtMs, issuedAtMs: nowMs, nodeUid: uid };
}

/**
 * The uid of Node `name`, for the binding: a LIST with a field selector (the agent's role has
 * `list` on nodes, not `get`).
 * @throws core's typed errors, and Error when no such Node is registered (yet)
 */
export async function nodeUid(transport: KubeTransport, name: string): Promise<string> {
  const selector = encodeURIComponent(`metadata.name=${name}`);
  const list = await transport.request<{ items?: { metadata?: { uid?: string } }[] }>(
    'GET',
    `/api/v1/nodes?fieldSelector=${selector}`,
  );
  const uid = list.items?.[0]?.metadata?.uid;
  if (!uid) throw new Error(`Node ${name} is not registered: the plugin's token is bound to it`);
  return uid;
}

/**
 * When to refresh: at half the token's lifetime (the kubelet refreshes projected tokens at 80 %;
 * half leaves room for an API outage of a quarter of the lifetime and retries before expiry),
 * or after `fixedMs` when given (tests).
 * @returns ms since epoch
 */
export function refreshAtMs(token: IssuedToken, fixedMs?: number): number {
  if (fixedMs !== undefined) return token.issuedAtMs + fixedMs;
  return token.issuedAtMs + Math.max(0, token.expiresAtMs - token.issuedAtMs) / 2;
}
