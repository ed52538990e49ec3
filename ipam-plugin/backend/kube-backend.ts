/**
 * The production backend: core's allocator over the Kubernetes API server, through core's lean
 * transport (no @kubernetes/client-node: docs/design-core.md §5). Loaded lazily by main.ts, so VERSION
 * never pays for it; the kubeconfig comes through kubeconfig-cache.ts, so a warm call never
 * loads the YAML parser. A kubeconfig that cannot be read is CNI code 11 (it is usually written
 * by the node agent after the runtime starts calling: try again later).
 */
import { DEFAULT_NODE_CACHE_FILE, DEFAULT_NODE_CACHE_MAX_AGE_MS } from 'blockipam/core';
import { KubeDatastore, isKubeconfigError } from 'blockipam/core/kube';
import type { KubeClientConfig } from 'blockipam/core/kube';
import type { Backend } from './port.ts';
import { createCoreBackend } from './core-backend.ts';
import { readNodeCache } from '../host/node-cache-file.ts';
import { CniCode, CniError } from '../cni/errors.ts';
import { loadKubeconfigCached } from '../host/kubeconfig-cache.ts';
import type { NetConf } from '../cni/netconf.ts';
import type { CniCommand } from '../cni/env.ts';
import { SerialTransport } from './serial-transport.ts';
import { isHostLockFree } from '../host/lock.ts';

/** 10 s per request: a hung connection must fail well inside the ADD budget (default 30 s). */
const requestTimeoutMs = 10_000;

/** Whether the host lock is free right now (a hint; true when it cannot be told). */
async function lockLooksFree(lockFile: string): Promise<boolean> {
  try {
    return await isHostLockFree(lockFile);
  } catch {
    return true;
  }
}

/**
 * Whether to open the API connection ahead (Bun's fetch.preconnect), overlapping the TLS
 * handshake with the rest of start-up (docs/benchmarks.md, issue 10's warm ADD). Not for an ADD
 * or DEL while another call holds the node's lock and hands requests on (`ipam.lockQueue`): in
 * a burst nearly every call waits, the holder serves most of them (combine.ts), and a served
 * waiter never sends a request — a connection opened ahead would cost it a TLS handshake (~2–4
 * ms of CPU, and the API server its share) for nothing. Nor for STATUS: the runtime polls it,
 * and a warm one is answered from the node cache without a request. CHECK, GC and calls with
 * `lockQueue: false` send their own requests, so they always open ahead and never probe the
 * lock. The probe is a hint: a call that ends up sending connects when it sends.
 */
export async function shouldPreconnect(conf: NetConf, command: CniCommand): Promise<boolean> {
  if (command === 'STATUS') return false;
  if (!conf.lockQueue || (command !== 'ADD' && command !== 'DEL')) return true;
  return lockLooksFree(conf.lockFile);
}

export async function createKubeBackend(conf: NetConf, command: CniCommand): Promise<Backend> {
  let cfg: KubeClientConfig;
  try {
    cfg = await loadKubeconfigCached(conf.kubeconfig, conf.cacheDir);
  } catch (e) {
    if (isKubeconfigError(e)) throw new CniError(CniCode.tryAgainLater, 'kubeconfig unavailable', e.message);
    throw e;
  }
  // One connection, requests in sequence (serial-transport.ts): one TLS handshake per call.
  const transport = new SerialTransport(cfg, {
    timeoutMs: Math.min(requestTimeoutMs, conf.timeoutMs),
    preconnect: await shouldPreconnect(conf, command),
  });
  const ds = new KubeDatastore(transport);
  return createCoreBackend({
    ds,
    conf,
    nodeCache: (node) =>
      readNodeCache({
        file: conf.nodeCacheFile ?? DEFAULT_NODE_CACHE_FILE,
        node,
        maxAgeMs: conf.nodeCacheMaxAgeMs ?? DEFAULT_NODE_CACHE_MAX_AGE_MS,
        identity: { cacheDir: conf.cacheDir, server: cfg.server, ca: cfg.ca },
        readClusterUID: async () => (await ds.getNamespace('kube-system'))?.metadata.uid,
      }),
    cacheKey: `${cfg.server}|${conf.kubeconfig}`,
    close: () => {
      transport.close();
      return Promise.resolve();
    },
    stats: () => ({ apiRequests: transport.stats.requests, byMethod: transport.stats.byMethod }),
  });
}
