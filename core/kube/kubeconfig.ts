/**
 * The kubeconfig loader, `blockipam/core/kubeconfig` (package.json "exports"): its own entry
 * because it loads the YAML parser, which costs more start-up than the CNI plugin's whole
 * protocol layer — the plugin imports it lazily, only when its parsed-kubeconfig cache misses.
 */
export { inClusterConfig, loadKubeconfig, SERVICE_ACCOUNT_DIR } from './config.ts';
export type { KubeClientConfig } from './config.ts';
