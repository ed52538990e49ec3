/**
 * A parsed kubeconfig document → connection settings, without the YAML parser: the CNI plugin
 * parses the agent-written kubeconfig (JSON) with JSON.parse and reaches for `yaml` only when the
 * file is not JSON (core/kube/config.ts `loadKubeconfig` parses YAML, then calls this).
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import type { KubeClientConfig } from './config.ts';
import { KubeconfigError } from './kubeconfig-error.ts';
import { tlsMaterialProblem } from './tls-material.ts';

type Dict = Record<string, unknown>;

/**
 * The connection settings of a parsed kubeconfig document (`path`: the file it was read from, for
 * messages and relative paths): the current context (or `options.context`; neither is an error, as in
 * kubectl), its cluster (server,
 * certificate-authority[-data], insecure-skip-tls-verify) and user (token, tokenFile,
 * client-certificate[-data], client-key[-data]). Relative paths are relative to the file.
 * Exec / auth-provider plugins are not supported (an error says so). certificate-authority,
 * client-certificate and client-key files are read here; tokenFile only when a request is sent
 * (KubeTransport, which re-reads it as the token rotates).
 * @throws KubeconfigError when the document lacks what is needed, when the server is not an
 *   http(s) URL, or when a
 *   certificate-authority / client-certificate / client-key file it names cannot be read (the
 *   message names the field and the resolved path), or when its TLS material cannot be used
 *   (not PEM, does not parse, a certificate without its key or with another key: tls-material.ts)
 */
export function kubeconfigFromDocument(
  parsed: unknown,
  path: string,
  options: { context?: string } = {},
): KubeClientConfig {
  const doc = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Dict;
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
  const serverProblem = kubeServerProblem(server);
  if (serverProblem)
    throw new KubeconfigError(
      `kubeconfig ${path}: clusters[].cluster.server of cluster ${String(context.cluster)} ${serverProblem}`,
    );
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

/**
 * Why `server` cannot be a kubeconfig cluster's server, or undefined when it can: an https:// or
 * http:// URL. Checked where a kubeconfig is read, not left to the first request's `new URL` (a
 * TypeError "Invalid URL" that the plugin reported as 999 and the agent and controller as exit 1).
 */
export function kubeServerProblem(server: string): string | undefined {
  if (URL.canParse(server) && ['https:', 'http:'].includes(new URL(server).protocol)) return undefined;
  return `is not an https:// or http:// URL: ${JSON.stringify(server.slice(0, 200))}`;
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
