/**
 * The node IPAM service's types: the five operations (AddCall, DelCall … and their outcomes)
 * that core/cni's commands call, on the agent and on the plugin's direct path alike, and the
 * error kinds a failure maps to (docs/design-core.md §Node IPAM service). They never travel on
 * the wire: the plugin forwards the raw CNI call (wire.ts). Dependency-free.
 */

/**
 * An error's `message` is at most MAX_MESSAGE_CHARS characters, shaped by boundMessage (a CNI
 * error's details are bounded the same way: core/cni/errors.ts): a refusal's text travels whole
 * up to that, and past it loses echoed values and its middle, never the part that names the
 * field, node, pool or policy.
 */
export { boundMessage, MAX_MESSAGE_CHARS } from '../errors/bounded-message.ts';

export type IpFamilyNumber = 4 | 6;

/** One attachment of one network: its handle is `<network>.<containerID>.<ifname>`. */
export interface AttachmentRef {
  readonly network: string;
  readonly containerID: string;
  readonly ifname: string;
}

/** The pod behind an attachment, from CNI_ARGS K8S_POD_* (absent outside Kubernetes). */
export interface PodCall {
  readonly namespace: string;
  readonly name: string;
  readonly uid?: string;
}

/** Pool names (or CIDRs) per family from the netconf; empty lists = automatic pools. */
interface PoolLists {
  readonly 4: readonly string[];
  readonly 6: readonly string[];
}

export interface AddCall {
  readonly attachment: AttachmentRef;
  readonly pod?: PodCall;
  readonly node: string;
  /** Families to auto-assign (ignored when `staticIPs` is non-empty). */
  readonly families: readonly IpFamilyNumber[];
  readonly pools: PoolLists;
  /**
   * Static IPs from the invocation (runtimeConfig.ips > args.cni.ips > CNI_ARGS IP=), at most one
   * per family, bare addresses. Empty: the pod annotation may name them, else auto-assign.
   */
  readonly staticIPs: readonly string[];
  /** The field `staticIPs` came from, for a message refusing one. */
  readonly staticIPsFrom?: string;
  /** The pod's annotations as the runtime gave them (runtimeConfig); they win over the pod object's. */
  readonly podAnnotations?: Readonly<Record<string, string>>;
  /**
   * Bare addresses auto-assignment must not hand out (held in host-local's store while the node
   * is adopted: core/cni/host-local-store.ts); static IPs are not checked against them.
   */
  readonly excludedIPs?: readonly string[];
}

export interface DelCall {
  readonly attachment: AttachmentRef;
  readonly node: string;
  /** K8S_POD_UID when the runtime gave one: an allocation of another pod UID is not released. */
  readonly podUID?: string;
}

export interface CheckCall {
  readonly attachment: AttachmentRef;
  readonly node: string;
  /** The addresses prevResult names (bare). */
  readonly expectedIPs: readonly string[];
}

export interface GcCall {
  readonly network: string;
  readonly node: string;
  /** Attachments that are live; every other allocation of this network on this node goes. */
  readonly validAttachments: readonly { readonly containerID: string; readonly ifname: string }[];
}

export interface StatusCall {
  readonly node: string;
  readonly families: readonly IpFamilyNumber[];
  readonly pools: PoolLists;
}

/**
 * An IP configuration as CNI results carry it: address in CIDR form with the block's prefix
 * (e.g. "10.244.3.70/26"), and the block's gateway (ordinal 1, e.g. "10.244.3.65"). Always
 * there: ptp needs the gateway (docs/design-plugin.md §Invariants, 3).
 */
export interface IpConfig {
  readonly address: string;
  readonly gateway: string;
}

/**
 * Why an ADD failed, in a bounded set of 11 (the agent's
 * `blockipam_agent_cni_add_failures_total{reason}`; core/node-ipam/failure-reason.ts maps
 * outcomes and errors to it):
 * - `pool_exhausted`: every pool tried is full for the node (no free address, no unclaimed block,
 *   nothing to borrow);
 * - `node_block_limit`: as pool_exhausted, and the node holds maxBlocksPerNode blocks;
 * - `no_matching_pool`: no pool matches the node and namespace, or a requested pool does not
 *   exist, overlaps an older pool, or its selectors exclude the namespace or node;
 * - `pool_disabled`: the pool that would serve is disabled or being deleted;
 * - `ip_taken`: a requested (static) address is held by another attachment;
 * - `ip_refused`: a requested address is outside every allowed pool, reserved, or in another
 *   node's block under strictAffinity;
 * - `duplicate`: the attachment already holds an address;
 * - `not_ready`: the agent has not synced yet, is stopping, or is busy;
 * - `api_unreachable`: the API server is unreachable, answers 5xx, compare-and-swap kept losing,
 *   or the call's time ran out;
 * - `refused`: the API server refused a write (RBAC, admission policy, authentication, invalid);
 * - `other`: anything else (a malformed request or annotation, a node name mismatch, a defect).
 */
export type AddFailureReason =
  | 'pool_exhausted'
  | 'node_block_limit'
  | 'no_matching_pool'
  | 'pool_disabled'
  | 'ip_taken'
  | 'ip_refused'
  | 'duplicate'
  | 'not_ready'
  | 'api_unreachable'
  | 'refused'
  | 'other';

export const ADD_FAILURE_REASONS: readonly AddFailureReason[] = [
  'pool_exhausted',
  'node_block_limit',
  'no_matching_pool',
  'pool_disabled',
  'ip_taken',
  'ip_refused',
  'duplicate',
  'not_ready',
  'api_unreachable',
  'refused',
  'other',
];

/**
 * An ADD that allocated nothing. `message` is core's text (core/allocator/failure-text.ts: the
 * pools tried, the reason, the next step); `reason` the bounded reason, informational (the plugin
 * does not read it; absent from an older agent).
 */
interface AddRefusal<K extends string> {
  readonly kind: K;
  readonly message: string;
  readonly reason?: AddFailureReason;
}

export type AddOutcome =
  | {
      readonly kind: 'allocated';
      readonly ips: readonly IpConfig[];
      /** CNI_ARGS named a pod the API server does not know: recorded without a pod reference. */
      readonly podNotFound?: boolean;
    }
  /** The attachment already holds addresses: nothing was changed. */
  | AddRefusal<'duplicate'>
  /** No free address, or no pool may serve; nothing was left allocated. */
  | AddRefusal<'exhausted'>
  /** A static IP is outside every eligible pool, reserved or taken; nothing left allocated. */
  | AddRefusal<'addressRefused'>
  /** Pool choice or annotations are invalid (an unknown or disabled pool, a malformed annotation). */
  | AddRefusal<'rejected'>
  /** The netconf does not fit the cluster (the pod runs on another node than ipam.nodeName). */
  | AddRefusal<'misconfigured'>;

export interface DelOutcome {
  /** Addresses released (0: nothing was allocated to the attachment, which is success). */
  readonly released: number;
}

export type CheckOutcome =
  | { readonly kind: 'ok' }
  | { readonly kind: 'missing'; readonly message: string }
  | { readonly kind: 'mismatch'; readonly message: string };

export interface GcOutcome {
  /** Handles released. */
  readonly released: readonly string[];
  /** Per-handle failures; GC continues past them (SPEC GC). */
  readonly errors: readonly string[];
  /** Stale by the runtime's list but kept: the pod (same UID) is alive on another node with that address. */
  readonly aliveElsewhere: readonly string[];
}

/** STATUS's answer: `ready` (an ADD could be served now) or `notReady` (CNI code 50). */
export type StatusOutcome =
  { readonly kind: 'ready' } | { readonly kind: 'notReady'; readonly message: string };

/** The operations, each with its call and outcome. */
export interface NodeIpamOps {
  add: { call: AddCall; outcome: AddOutcome };
  del: { call: DelCall; outcome: DelOutcome };
  check: { call: CheckCall; outcome: CheckOutcome };
  gc: { call: GcCall; outcome: GcOutcome };
  status: { call: StatusCall; outcome: StatusOutcome };
}
export type NodeIpamOp = keyof NodeIpamOps;

/**
 * Why a node IPAM operation failed, as core/cni maps it to a CNI code (errorOfKind;
 * docs/design-plugin.md §Errors):
 * - `notReady`: the agent has not synced its view yet, is stopping, or is busy (its
 *   `maxConnections` connections are open) (CNI 11);
 * - `unavailable`: the API server cannot be reached or answered 5xx (CNI 11);
 * - `timeout`: the request's budget ran out (CNI 11; a write may have landed: the runtime's
 *   DEL releases it);
 * - `auth`: the API server did not accept the agent's credentials (401) or TLS (CNI 105);
 * - `forbidden`: the API server's authorizer (RBAC) denied the request (403; CNI 105);
 * - `admission`: an admission policy denied the write — the message names the policy and
 *   carries its reason whole (CNI 107);
 * - `apiRejected`: the API server rejected a request as invalid, or answered non-JSON (CNI 106);
 * - `badRequest`: a forwarded request does not parse, or is of another protocol version (CNI
 *   999 — a plugin and an agent of mismatched builds: the message names both versions);
 * - `misconfigured`: the call names another node than the agent serves — the netconf's
 *   `ipam.nodeName` is wrong (CNI 7, "node name mismatch", as the direct path's ADD outcome
 *   `misconfigured`); the message is core's node-check.ts `servedNodeProblem`;
 * - `internal`: anything else (CNI 999).
 */
export type NodeIpamErrorKind =
  | 'notReady'
  | 'unavailable'
  | 'timeout'
  | 'auth'
  | 'forbidden'
  | 'admission'
  | 'apiRejected'
  | 'badRequest'
  | 'misconfigured'
  | 'internal';
