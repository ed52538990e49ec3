/**
 * The production backend of the direct path: core's node IPAM service over the Kubernetes API
 * server, through core's lean transport (no @kubernetes/client-node: docs/design-core.md §5), on
 * one connection per call (serial-transport.ts). Every operation reads what it decides with —
 * LIST of the node's blocks, the snapshot, node, pod and namespace (`datastoreInputs`) — and
 * writes with compare-and-swap: nothing is cached between calls. Loaded lazily by main.ts, so a
 * call the agent serves never evaluates it.
 *
 * The kubeconfig is parsed with JSON.parse (the node agent writes it as JSON) and with the YAML
 * loader only when it is not JSON. A kubeconfig that cannot be read is CNI code 11 (it is usually
 * written by the node agent after the runtime starts calling: try again later).
 */
import { readFileSync } from 'node:fs';
import {
  credentialNodeName,
  KubeDatastore,
  KubeconfigError,
  isKubeconfigError,
  kubeconfigFromDocument,
} from 'blockipam/core/kube';
import type { KubeClientConfig } from 'blockipam/core/kube';
import type { Backend } from './port.ts';
import type { NetConf } from 'blockipam/core/cni';
import { createCoreBackend } from './core-backend.ts';
import { CniCode, CniError } from 'blockipam/core/cni/errors';
import { SerialTransport } from './serial-transport.ts';

/** 10 s per request: a hung connection must fail well inside the ADD budget (default 30 s). */
const requestTimeoutMs = 10_000;

/**
 * The connection settings of the kubeconfig at `path`: JSON.parse first (what the node agent
 * writes), the YAML loader (`blockipam/core/kubeconfig`) only when the text is not JSON.
 * @throws KubeconfigError when the file is unreadable or incomplete
 */
export async function loadKubeconfigFile(path: string): Promise<KubeClientConfig> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new KubeconfigError(`cannot read kubeconfig ${path}: ${(e as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return (await import('blockipam/core/kubeconfig')).loadKubeconfig(path);
  }
  return kubeconfigFromDocument(doc, path);
}

export async function createKubeBackend(conf: NetConf): Promise<Backend> {
  let cfg: KubeClientConfig;
  try {
    cfg = await loadKubeconfigFile(conf.kubeconfig);
  } catch (e) {
    if (isKubeconfigError(e)) throw new CniError(CniCode.tryAgainLater, 'kubeconfig unavailable', e.message);
    throw e;
  }
  // One connection, requests in sequence (serial-transport.ts): one TLS handshake per call,
  // opened now so that it overlaps the host lock's wait.
  const transport = new SerialTransport(cfg, { timeoutMs: Math.min(requestTimeoutMs, conf.timeoutMs) });
  const credentialNode = credentialNodeName(cfg);
  return createCoreBackend({
    ...(credentialNode === undefined ? {} : { credentialNode }),
    ds: new KubeDatastore(transport),
    close: () => {
      transport.close();
      return Promise.resolve();
    },
    stats: () => ({ apiRequests: transport.stats.requests, byMethod: transport.stats.byMethod }),
  });
}
