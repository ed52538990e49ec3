/**
 * A paged LIST's `continue` token is too old (HTTP 410, reason Expired): the resourceVersion the
 * list is served at has been compacted away (etcd compaction, every 5 min by default), so the
 * remaining pages can no longer be consistent with the first. Start the LIST over without the
 * token (core's `listAll` does, once). Source: Kubernetes API concepts, "Retrieving large
 * results sets in chunks".
 */
export class ExpiredError extends Error {
  override readonly name = 'ExpiredError';
  /** e.g. "GET /apis/ipam.blockipam.io/v1alpha1/ipamblocks" */
  readonly request: string;

  constructor(request: string, message = `${request}: the continue token has expired`) {
    super(message);
    this.request = request;
  }
}

/** True when `error` is an {@link ExpiredError} (also across bundles: compares the stable `name`). */
export function isExpired(error: unknown): error is ExpiredError {
  return error instanceof Error && error.name === 'ExpiredError';
}
