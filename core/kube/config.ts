/**
 * Where and how to reach the API server: from a kubeconfig file (parsed with `yaml`) or from the
 * in-cluster service account. Lean on purpose (no @kubernetes/client-node: its import costs
 * ~400 ms, docs/design-core.md §5).
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { parse } from 'yaml';
import { KubeconfigError } from './kubeconfig-error.ts';
import { tlsMaterialProblem } from './tls-material.ts';

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

type Dict = Record<string, unknown>;

/**
 * Loads a kubeconfig file: the current context (or `options.context`; neither is an error, as in
 * kubectl), its cluster (server,
 * certificate-authority[-data], insecure-skip-tls-verify) and user (token, tokenFile,
 * client-certificate[-data], client-key[-data]). Relative paths are relative to the file.
 * Exec / auth-provider plugins are not supported (an error says so). certificate-authority,
 * client-certificate and client-key files are read here; tokenFile only when a request is sent
 * (KubeTransport, which re-reads it as the token rotates).
 * @throws KubeconfigError when the file is unreadable or lacks what is needed, or when a
 *   certificate-authority / client-certificate / client-key file it names cannot be read (the
 *   message names the field and the resolved path), or when its TLS material cannot be used
 *   (not PEM, does not parse, a certificate without its key or with another key: tls-material.ts)
 */
export function loadKubeconfig(path: string, options: { context?: string } = {}): KubeClientConfig {
  let doc: Dict;
  try {
    doc = (parse(readFileSync(path, 'utf8')) ?? {}) as Dict;
  } catch (error) {
    throw new KubeconfigError(`cannot read kubeconfig ${path}: ${(error as Error).message}`);
  }
  // Like kubectl (and client-go): no context named and no current-context is an error, never
  // "the first context" — a kubeconfig with several contexts would silently pick one.
  const current = doc['current-context'];
  const contextName =
    options.context ?? (typeof current === 'string' && current !== '' ? current : undefined);
  if (contextName === undefined)
    throw new KubeconfigError(
      `kubeconfig ${path}: current-context is not set (and no context was given): set current-context to one of its contexts`,
    );
  const context = pick(doc, 'contexts', 'context', contextName, path);
  const cluster = pick(doc, 'clusters', 'cluster', context.cluster as string | undefined, path);
  const user = context.user === undefined ? {} : pick(doc, 'users', 'user', context.user as string, path);
  if (user.exec !== undefined || user['auth-provider'] !== undefined)
    throw new KubeconfigError(`kubeconfig ${path}: exec and auth-provider credentials are not supported`);
  const server = cluster.server;
  if (typeof server !== 'string' || server === '')
    throw new KubeconfigError(`kubeconfig ${path}: cluster has no server`);
  const base = dirname(path);
  const files: string[] = [];
  const file = (key: string, dataKey: string, from: Dict): Buffer | undefined => {
    if (typeof from[dataKey] === 'string') return Buffer.from(from[dataKey], 'base64');
    if (typeof from[key] !== 'string') return undefined;
    const target = isAbsolute(from[key]) ? from[key] : join(base, from[key]);
    files.push(target);
    try {
      return readFileSync(target);
    } catch (error) {
      throw new KubeconfigError(
        `kubeconfig ${path}: cannot read ${key} ${target}: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    }
  };
  const tokenFile =
    typeof user.tokenFile === 'string'
      ? isAbsolute(user.tokenFile)
        ? user.tokenFile
        : join(base, user.tokenFile)
      : undefined;
  const config = strip({
    server: server.replace(/\/+$/, ''),
    ca: file('certificate-authority', 'certificate-authority-data', cluster),
    cert: file('client-certificate', 'client-certificate-data', user),
    key: file('client-key', 'client-key-data', user),
    token: typeof user.token === 'string' ? user.token : undefined,
    tokenFile,
    insecureSkipTLSVerify: cluster['insecure-skip-tls-verify'] === true ? true : undefined,
    files: files.length > 0 ? files : undefined,
  });
  const problem = tlsMaterialProblem(config, `kubeconfig ${path}`);
  if (problem) throw new KubeconfigError(problem);
  return config;
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

function pick(doc: Dict, list: string, field: string, name: string | undefined, path: string): Dict {
  const entries = (Array.isArray(doc[list]) ? doc[list] : []) as Dict[];
  const entry = name === undefined ? entries[0] : entries.find((e) => e.name === name);
  const value = entry?.[field];
  if (typeof value !== 'object' || value === null)
    throw new KubeconfigError(`kubeconfig ${path}: no ${field} ${JSON.stringify(name ?? '(first)')}`);
  return value as Dict;
}

function strip(config: KubeClientConfig): KubeClientConfig {
  return Object.fromEntries(
    Object.entries(config).filter(([, v]) => v !== undefined),
  ) as unknown as KubeClientConfig;
}
