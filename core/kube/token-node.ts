/**
 * The Node a credential belongs to, read from its service-account token: a token bound to a Node
 * (the plugin's, which the agent mints: TokenRequest `boundObjectRef` kind Node) or to a pod
 * scheduled on one carries the private claim `kubernetes.io.node.name`, from which the API server
 * derives `authentication.kubernetes.io/node-name` — the name the admission policies confine the
 * credential's writes to (docs/install.md §Security). Read, not verified: the plugin uses it to
 * name a misconfiguration before it writes, never to decide what is allowed (the API server
 * does that).
 */
import { readFileSync } from 'node:fs';
import type { KubeClientConfig } from './config.ts';

/** The claims of a JWT's payload (read, not verified), or undefined when `token` is no JWT. */
function claimsOf(token: string): Record<string, unknown> | undefined {
  const parts = token.trim().split('.');
  if (parts.length !== 3 || !parts[1]) return undefined;
  try {
    const claims: unknown = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
    return typeof claims === 'object' && claims !== null ? (claims as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The `kubernetes.io.node.name` claim of a JWT's payload, or undefined when `token` is no JWT
 * (an opaque or static token), its payload is not JSON, or it names no node. Pure; never throws.
 */
export function tokenNodeName(token: string): string | undefined {
  const name = (claimsOf(token)?.['kubernetes.io'] as { node?: { name?: unknown } } | undefined)?.node?.name;
  return typeof name === 'string' && name !== '' ? name : undefined;
}

/**
 * The `exp` claim of a JWT (a service-account token), ms since epoch; undefined when `token` is
 * no JWT or has no finite numeric `exp`. Read, not verified. Pure; never throws.
 */
export function tokenExpiryMs(token: string): number | undefined {
  const exp = claimsOf(token)?.exp;
  return typeof exp === 'number' && Number.isFinite(exp) ? exp * 1000 : undefined;
}

/**
 * The Node `config`'s credential belongs to: {@link tokenNodeName} of its `token`, or of its
 * `tokenFile`'s content (read now; an unreadable file names none — the transport reports it when
 * it needs the token). Undefined for a client certificate or a token without the claim.
 */
export function credentialNodeName(
  config: Pick<KubeClientConfig, 'token' | 'tokenFile'>,
): string | undefined {
  if (config.token) return tokenNodeName(config.token);
  if (!config.tokenFile) return undefined;
  try {
    return tokenNodeName(readFileSync(config.tokenFile, 'utf8'));
  } catch {
    return undefined;
  }
}
