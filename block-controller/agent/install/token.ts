/**
 * The plugin's credential: a bound service-account token from the TokenRequest API
 * (POST /api/v1/namespaces/{namespace}/serviceaccounts/{name}/token), bound to the agent's own
 * pod when it runs in one (POD_NAME + POD_UID): the token then carries the node's name, dies
 * with the pod (the API server refuses it within ~1 s of the pod's deletion), and per-node
 * admission policies can key on `authentication.kubernetes.io/node-name`.
 */
import type { KubeTransport } from 'blockipam/core/kube';

export interface TokenSpec {
  readonly namespace: string;
  readonly serviceAccount: string;
  /** Audiences; empty = the API server's default (its own issuer). */
  readonly audiences: readonly string[];
  /** Requested lifetime, s. The API server refuses less than 600 and may shorten or extend it. */
  readonly expirationSeconds: number;
  /** The pod to bind to; undefined = an unbound token (outside a pod: tests, manual runs). */
  readonly boundPod?: { readonly name: string; readonly uid: string };
}

export interface IssuedToken {
  readonly token: string;
  /** ms since epoch, from the answer's status.expirationTimestamp. */
  readonly expiresAtMs: number;
  /** ms since epoch, the local clock when the answer arrived. */
  readonly issuedAtMs: number;
}

interface TokenRequestAnswer {
  status?: { token?: string; expirationTimestamp?: string };
}

/**
 * Requests a token.
 * @throws core's typed errors (NotFoundError: no such ServiceAccount or pod; ApiError 403: the
 *   agent may not create serviceaccounts/token) and Error when the answer lacks a token
 */
export async function requestToken(
  transport: KubeTransport,
  spec: TokenSpec,
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
        ...(spec.boundPod
          ? {
              boundObjectRef: {
                kind: 'Pod',
                apiVersion: 'v1',
                name: spec.boundPod.name,
                uid: spec.boundPod.uid,
              },
            }
          : {}),
      },
    },
  });
  const token = answer.status?.token;
  const expiresAtMs = Date.parse(answer.status?.expirationTimestamp ?? '');
  if (!token || !Number.isFinite(expiresAtMs))
    throw new Error(
      `TokenRequest for ${spec.namespace}/${spec.serviceAccount}: the answer has no token or expiry`,
    );
  return { token, expiresAtMs, issuedAtMs: nowMs };
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
