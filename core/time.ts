/** Time formats of the API (pure). */

/**
 * RFC 3339 UTC with seconds precision (`2026-11-29T08:00:00Z`): Kubernetes' `metav1.Time`, the
 * format of every block timestamp, creationTimestamp and IPPool condition. (A Lease's
 * `metav1.MicroTime` has microseconds: block-controller's lease.ts.)
 */
export function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
}
