/**
 * The Kubernetes adapter, `blockipam/core/kube` (package.json "exports"): the KubeDatastore and
 * the lean transport under it, importable without the allocator (the CNI plugin uses the
 * transport directly):
 *
 *   import { loadKubeconfig } from 'blockipam/core/kubeconfig'; // or inClusterConfig()
 *   const api = new KubeTransport(loadKubeconfig('/etc/cni/net.d/blockipam.kubeconfig'), { timeoutMs: 10_000 });
 *   const pod = await api.request<Pod>('GET', `/api/v1/namespaces/${ns}/pods/${name}`);
 *   api.close();
 *
 * Errors are core/errors' typed classes (NotFound, AlreadyExists, Conflict, Invalid, Unavailable,
 * ApiError); `api.stats` counts requests. The kubeconfig loader is its own entry
 * (core/kube/kubeconfig.ts) because it loads the YAML parser: this one must not
 * (`kubeconfigFromDocument` takes a document parsed by the caller, e.g. JSON.parse).
 */
export type { KubeClientConfig } from './config.ts';
export { KubeDatastore } from '../datastore/kube.ts';
export { KubeconfigError, isKubeconfigError } from './kubeconfig-error.ts';
export { kubeconfigFromDocument, kubeServerProblem } from './kubeconfig-document.ts';
export { tlsMaterialProblem } from './tls-material.ts';
export { credentialNodeName, tokenExpiryMs, tokenNodeName } from './token-node.ts';
export { errorFor, KubeTransport } from './transport.ts';
export type { Method, RequestOptions } from './transport.ts';
