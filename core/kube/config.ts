/**
 * Where and how to reach the API server: from a kubeconfig file (parsed with `yaml`) or from the
 * in-cluster service account. Lean on purpose (no @kubernetes/client-node: its import costs
 * ~400 ms, docs/design-core.md §5).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { KubeconfigError } from './kubeconfig-error.ts';
import { kubeconfigFromDocument } from './kubeconfig-document.ts';

/** Resolved connection settings. Buffers hold PEM data. */
export interface KubeClientConfig {
  /** e.g. "https://127.0.0.1:6443" */
  server: string;
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  /** Bearer token (static). */
  token?: string;
  /** Bearer token file, re-read at most once a minute (service-account tokens rotate). */
  tokenFile?: string;
  insecureSkipTLSVerify?: boolean;
  /**
   * Absolute paths of the certificate-authority / client-certificate / client-key files read
   * (not the kubeconfig itself, not tokenFile): a cache of this config is stale when one changes.
   */
  files?: string[];
}

/**
 * Loads a kubeconfig file (YAML or JSON): {@link kubeconfigFromDocument} on its parsed text.
 * @throws KubeconfigError when the file is unreadable or does not parse, or as
 *   {@link kubeconfigFromDocument}
 */
export function loadKubeconfig(path: string, options: { context?: string } = {}): KubeClientConfig {
  let doc: unknown;
  try {
    doc = parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new KubeconfigError(`cannot read kubeconfig ${path}: ${(error as Error).message}`);
  }
  return kubeconfigFromDocument(doc, path, options);
}

/** Service-account directory of a pod. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * In-cluster config: KUBERNETES_SERVICE_HOST / _PORT, the service-account CA and token file.
 * @throws KubeconfigError when not running in a pod
 */
export function inClusterConfig(
  env: Readonly<Record<string, string | undefined>> = process.env,
  dir: string = SERVICE_ACCOUNT_DIR,
): KubeClientConfig {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port)
    throw new KubeconfigError(
      'not running in a cluster: KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT are unset',
    );
  let ca: Buffer;
  try {
    ca = readFileSync(join(dir, 'ca.crt'));
  } catch (error) {
    throw new KubeconfigError(`cannot read the service-account CA: ${(error as Error).message}`);
  }
  return {
    server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
    ca,
    tokenFile: join(dir, 'token'),
  };
}
