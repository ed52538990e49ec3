/**
 * The direct path's port: core's node IPAM service (`blockipam/core/node-ipam` createNodeIpam)
 * over a datastore, with what the plugin logs and frees. `kube-backend.ts` builds it on core's
 * Kubernetes datastore; in-process tests build it on the memory datastore or a fake. Expected
 * outcomes are values (the node IPAM protocol's); failures are core's errors, mapped to CNI codes
 * by direct-client.ts.
 */
import type { NodeIpam } from 'blockipam/core/node-ipam';
import type { NetConf } from 'blockipam/core/cni';

export interface Backend {
  /** ADD, DEL, CHECK, GC and STATUS, each bounded by its signal. */
  readonly ipam: NodeIpam;
  /**
   * The Node the backend's credential belongs to (its token's node claim: core/kube's
   * credentialNodeName), undefined when it names none (a client certificate, an unbound token).
   * The direct path refuses a call naming another node before any write.
   */
  readonly credentialNode?: string;
  /** Frees connections; idempotent. */
  close(): Promise<void>;
  /** Counters of this invocation (API requests …), logged with the outcome. */
  stats?(): Readonly<Record<string, unknown>>;
}

/** Creates the backend for one invocation's config (lazily: only a call the direct path serves). */
export type BackendFactory = (conf: NetConf) => Promise<Backend>;
