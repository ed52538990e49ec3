/**
 * The lean Kubernetes transport, importable on its own (the CNI plugin uses it directly):
 *
 *   const config = loadKubeconfig('/etc/cni/net.d/blockipam.kubeconfig'); // or inClusterConfig()
 *   const api = new KubeTransport(config, { timeoutMs: 10_000 });
 *   const pod = await api.request<Pod>('GET', `/api/v1/namespaces/${ns}/pods/${name}`);
 *   api.close();
 *
 * Errors are core/errors' typed classes (NotFound, AlreadyExists, Conflict, Invalid, Unavailable,
 * ApiError); `api.stats` counts requests.
 */
export { inClusterConfig, loadKubeconfig, SERVICE_ACCOUNT_DIR } from './config.ts';
export type { KubeClientConfig } from './config.ts';
export { KubeconfigError, isKubeconfigError } from './kubeconfig-error.ts';
export { errorFor, KubeTransport } from './transport.ts';
export type { HttpClientKind, Method, RequestOptions, TransportStats } from './transport.ts';
