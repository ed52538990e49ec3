/**
 * Leader election on a coordination.k8s.io/v1 Lease, decided as client-go's
 * tools/leaderelection does (pure part). A candidate may take the lease when nobody holds it,
 * when it holds it already, or when the holder has not renewed it for `leaseDurationSeconds`
 * as measured on **this** process's clock from the moment it last saw the record change
 * (client-go's observedTime) — never from the record's own timestamps, so clock skew between
 * replicas cannot make two leaders. Every write is an UPDATE on the resourceVersion read
 * (compare-and-swap): of two candidates racing for an expired lease, one gets 409.
 */

/** The spec of a coordination.k8s.io/v1 Lease (the fields leader election uses). */
export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  /** RFC 3339 with microseconds (MicroTime). */
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string; uid?: string };
  spec?: LeaseSpec;
}

/** What a candidate last saw of the lease, and when (its own clock). */
export interface Observation {
  spec: LeaseSpec;
  resourceVersion: string;
  /** ms, this process's clock, when `spec` was first seen in this form. */
  observedAtMs: number;
}

/** MicroTime, as the API server stores it: 2026-12-01T08:00:00.000000Z. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/Z$/, '000Z');
}

/**
 * Updates the observation with a fresh read: the time only moves when the record changed
 * (holder, renew time or transitions), as client-go compares the raw record.
 */
export function observe(previous: Observation | undefined, lease: Lease, nowMs: number): Observation {
  const spec = lease.spec ?? {};
  const same =
    previous !== undefined &&
    previous.spec.holderIdentity === spec.holderIdentity &&
    previous.spec.renewTime === spec.renewTime &&
    previous.spec.leaseTransitions === spec.leaseTransitions &&
    previous.spec.leaseDurationSeconds === spec.leaseDurationSeconds;
  return {
    spec,
    resourceVersion: lease.metadata.resourceVersion ?? '',
    observedAtMs: same ? previous.observedAtMs : nowMs,
  };
}

/** The decision of one try: write this spec (as an UPDATE on `resourceVersion`), or wait. */
export type Decision = { take: LeaseSpec } | { wait: { holder: string; expiresInMs: number } };

/**
 * Whether `identity` may take or renew the observed lease at `nowMs`, and the spec to write.
 * `leaseDurationSeconds` of the record (when set) counts, so every replica waits the holder's own
 * duration. acquireTime is kept on renewal; leaseTransitions grows on every acquisition.
 */
export function decide(
  identity: string,
  seen: Observation,
  nowMs: number,
  leaseDurationMs: number,
): Decision {
  const holder = seen.spec.holderIdentity ?? '';
  const durationMs =
    seen.spec.leaseDurationSeconds !== undefined ? seen.spec.leaseDurationSeconds * 1000 : leaseDurationMs;
  const expiresInMs = seen.observedAtMs + durationMs - nowMs;
  if (holder !== '' && holder !== identity && expiresInMs > 0) return { wait: { holder, expiresInMs } };
  const now = microTime(nowMs);
  const renewing = holder === identity;
  return {
    take: {
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
      acquireTime: renewing && seen.spec.acquireTime ? seen.spec.acquireTime : now,
      renewTime: now,
      leaseTransitions: (seen.spec.leaseTransitions ?? 0) + (renewing ? 0 : 1),
    },
  };
}

/** The spec written on release (client-go ReleaseOnCancel): no holder, 1 s, so others take it at once. */
export function releasedSpec(held: LeaseSpec, nowMs: number): LeaseSpec {
  return { ...held, holderIdentity: '', leaseDurationSeconds: 1, renewTime: microTime(nowMs) };
}
