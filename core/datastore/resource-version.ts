/**
 * Ordering of Kubernetes resourceVersions, for the caches that lay copies of one object read at
 * different moments over each other (the node agent's view of its blocks, the batching
 * decorator's speculative states): the newer copy wins, never the older.
 *
 * resourceVersions are opaque to clients by contract, but the API server's are etcd revisions
 * (decimal integers) and the memory datastore's too. Anything else cannot be compared and is
 * taken as not later — a caller then treats the copies as equally new.
 */

/**
 * True when `a` is a later resourceVersion than `b` (both decimal integers, compared as
 * BigInt); false when either is missing, empty or not decimal digits.
 */
export function isLaterVersion(a: string | undefined, b: string | undefined): boolean {
  if (!a || !b || !/^\d+$/.test(a) || !/^\d+$/.test(b)) return false;
  return BigInt(a) > BigInt(b);
}
