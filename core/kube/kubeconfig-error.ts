/** A kubeconfig (or in-cluster configuration) is missing, unreadable or unusable. */
export class KubeconfigError extends Error {
  override readonly name = 'KubeconfigError';
}

/** True when `error` is a {@link KubeconfigError}. */
export function isKubeconfigError(error: unknown): error is KubeconfigError {
  return error instanceof Error && error.name === 'KubeconfigError';
}
