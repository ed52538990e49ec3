/**
 * The node IPAM protocol: what the CNI plugin sends the node agent over the agent's Unix socket,
 * and what it answers (docs/design-agent.md §IPAM server). One request per connection: the
 * plugin writes one JSON document and a newline, the agent answers one JSON document and a
 * newline, then closes. Both ends validate what they receive with {@link parseRequest} /
 * {@link parseResponse}; a document of another `v` is refused by name, never guessed at.
 *
 * Dependency-free on purpose: the plugin's start-up path loads this module (and the
 * dependency-free bounded-message.ts it re-exports) and nothing of the allocator
 * (docs/design-plugin.md §Runtime).
 */

/**
 * The protocol version this build speaks. A change of any shape below bumps it, but for an added
 * error kind: an older plugin reports one it does not know as a malformed answer (CNI 999) to a
 * call that fails either way, where a bump would fail every call between builds.
 */
export const NODE_IPAM_PROTOCOL = 1;

/**
 * An error's `message` on the wire is at most MAX_MESSAGE_CHARS characters, shaped by
 * boundMessage (the agent bounds it; the plugin bounds the CNI error's details the same way):
 * a refusal's text travels whole up to that, and past it loses echoed values and its middle,
 * never the part that names the field, node, pool or policy.
 */
export { boundMessage, MAX_MESSAGE_CHARS } from '../errors/bounded-message.ts';

/** Requests larger than this are refused (bytes of JSON; a netconf is a few KiB). */
export const MAX_REQUEST_BYTES = 1 << 20;

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
export interface PoolLists {
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
export const NODE_IPAM_OPS: readonly NodeIpamOp[] = ['add', 'del', 'check', 'gc', 'status'];

/** A request on the wire. */
export type NodeIpamRequest = {
  [K in NodeIpamOp]: {
    readonly v: typeof NODE_IPAM_PROTOCOL;
    readonly op: K;
    /** The caller's budget for this request, ms: the agent gives up (and writes nothing more) after it. */
    readonly timeoutMs: number;
    readonly call: NodeIpamOps[K]['call'];
  };
}[NodeIpamOp];

/**
 * Why a request failed, as the plugin maps it to a CNI code (docs/design-plugin.md §Errors):
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
 * - `badRequest`: the request does not parse, or is of another protocol version (CNI 999 — a
 *   plugin and an agent of mismatched builds: the message names both versions);
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

export const NODE_IPAM_ERROR_KINDS: readonly NodeIpamErrorKind[] = [
  'notReady',
  'unavailable',
  'timeout',
  'auth',
  'forbidden',
  'admission',
  'apiRejected',
  'badRequest',
  'misconfigured',
  'internal',
];

/** A response on the wire: the operation's outcome, or an error. */
export type NodeIpamResponse<K extends NodeIpamOp = NodeIpamOp> =
  | { readonly v: typeof NODE_IPAM_PROTOCOL; readonly ok: true; readonly outcome: NodeIpamOps[K]['outcome'] }
  | {
      readonly v: typeof NODE_IPAM_PROTOCOL;
      readonly ok: false;
      readonly error: { readonly kind: NodeIpamErrorKind; readonly message: string };
    };

type Problem = { readonly problem: string };

/** Longest value a problem quotes (characters of JSON); the rest is cut with "…". */
const QUOTE_MAX = 64;

/**
 * A received value as a problem message names it: a scalar as its JSON (cut to QUOTE_MAX), an
 * array or object by its type — never JSON.stringify of a whole value, which overflows the stack
 * on a deeply nested one (100,000 levels fit in a 1 MiB request) and can echo 1 MiB back.
 */
function quote(v: unknown): string {
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object' && v !== null) return 'an object';
  const text = v === undefined ? 'nothing' : JSON.stringify(v);
  return text.length > QUOTE_MAX ? `${text.slice(0, QUOTE_MAX)}…` : text;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const isString = (v: unknown): v is string => typeof v === 'string';
const isStringList = (v: unknown): v is string[] => Array.isArray(v) && v.every(isString);
const isFamilies = (v: unknown): v is IpFamilyNumber[] =>
  Array.isArray(v) && v.every((f) => f === 4 || f === 6);
const isStringMap = (v: unknown): v is Record<string, string> =>
  isObject(v) && Object.values(v).every(isString);
const optional = (v: unknown, check: (v: unknown) => boolean): boolean => v === undefined || check(v);

function isAttachment(v: unknown): v is AttachmentRef {
  return isObject(v) && isString(v.network) && isString(v.containerID) && isString(v.ifname);
}
function isPools(v: unknown): v is PoolLists {
  return isObject(v) && isStringList(v[4]) && isStringList(v[6]);
}
function isPod(v: unknown): v is PodCall {
  return isObject(v) && isString(v.namespace) && isString(v.name) && optional(v.uid, isString);
}

/** The first problem of a call's shape for `op`, or undefined. Field names as on the wire. */
function callProblem(op: NodeIpamOp, c: unknown): string | undefined {
  if (!isObject(c)) return 'call: not an object';
  if (!isString(c.node) || c.node === '') return 'call.node: not a non-empty string';
  switch (op) {
    case 'add':
      if (!isAttachment(c.attachment)) return 'call.attachment: needs network, containerID, ifname';
      if (!optional(c.pod, isPod)) return 'call.pod: needs namespace and name (strings), uid optional';
      if (!isFamilies(c.families)) return 'call.families: not a list of 4 and 6';
      if (!isPools(c.pools)) return 'call.pools: needs lists "4" and "6" of strings';
      if (!isStringList(c.staticIPs)) return 'call.staticIPs: not a list of strings';
      if (!optional(c.staticIPsFrom, isString)) return 'call.staticIPsFrom: not a string';
      if (!optional(c.podAnnotations, isStringMap)) return 'call.podAnnotations: not a map of strings';
      return undefined;
    case 'del':
      if (!isAttachment(c.attachment)) return 'call.attachment: needs network, containerID, ifname';
      if (!optional(c.podUID, isString)) return 'call.podUID: not a string';
      return undefined;
    case 'check':
      if (!isAttachment(c.attachment)) return 'call.attachment: needs network, containerID, ifname';
      if (!isStringList(c.expectedIPs)) return 'call.expectedIPs: not a list of strings';
      return undefined;
    case 'gc':
      if (!isString(c.network)) return 'call.network: not a string';
      if (
        !Array.isArray(c.validAttachments) ||
        !c.validAttachments.every((a) => isObject(a) && isString(a.containerID) && isString(a.ifname))
      )
        return 'call.validAttachments: not a list of {containerID, ifname}';
      return undefined;
    case 'status':
      if (!isFamilies(c.families)) return 'call.families: not a list of 4 and 6';
      if (!isPools(c.pools)) return 'call.pools: needs lists "4" and "6" of strings';
      return undefined;
  }
}

/**
 * Validates a request document (already JSON-decoded).
 * @returns the request, or a problem naming the field (`v` first: another version is named)
 */
export function parseRequest(doc: unknown): NodeIpamRequest | Problem {
  if (!isObject(doc)) return { problem: 'request: not a JSON object' };
  if (doc.v !== NODE_IPAM_PROTOCOL)
    return {
      problem: `request: protocol version ${quote(doc.v)}, this agent speaks ${NODE_IPAM_PROTOCOL} (plugin and agent of different releases?)`,
    };
  if (!NODE_IPAM_OPS.includes(doc.op as NodeIpamOp))
    return { problem: `request.op: ${quote(doc.op)} is not one of ${NODE_IPAM_OPS.join(', ')}` };
  if (typeof doc.timeoutMs !== 'number' || !Number.isFinite(doc.timeoutMs) || doc.timeoutMs <= 0)
    return { problem: 'request.timeoutMs: not a positive number' };
  const problem = callProblem(doc.op as NodeIpamOp, doc.call);
  return problem ? { problem: `request.${problem}` } : (doc as unknown as NodeIpamRequest);
}

function outcomeProblem(op: NodeIpamOp, o: unknown): string | undefined {
  if (!isObject(o)) return 'outcome: not an object';
  const message = (): string | undefined =>
    isString(o.message) ? undefined : 'outcome.message: not a string';
  switch (op) {
    case 'add':
      if (o.kind === 'allocated')
        return Array.isArray(o.ips) &&
          o.ips.length > 0 &&
          o.ips.every((i) => isObject(i) && isString(i.address) && isString(i.gateway))
          ? undefined
          : 'outcome.ips: not a non-empty list of {address, gateway}';
      return ['duplicate', 'exhausted', 'addressRefused', 'rejected', 'misconfigured'].includes(
        o.kind as string,
      )
        ? message()
        : `outcome.kind: ${quote(o.kind)}`;
    case 'del':
      return typeof o.released === 'number' ? undefined : 'outcome.released: not a number';
    case 'check':
      if (o.kind === 'ok') return undefined;
      return o.kind === 'missing' || o.kind === 'mismatch' ? message() : `outcome.kind: ${quote(o.kind)}`;
    case 'gc':
      return isStringList(o.released) && isStringList(o.errors) && isStringList(o.aliveElsewhere)
        ? undefined
        : 'outcome: needs lists released, errors, aliveElsewhere';
    case 'status':
      if (o.kind === 'ready') return undefined;
      return o.kind === 'notReady' ? message() : `outcome.kind: ${quote(o.kind)}`;
  }
}

/**
 * Validates a response document to a request of `op` (already JSON-decoded).
 * @returns the response, or a problem naming the field
 */
export function parseResponse<K extends NodeIpamOp>(op: K, doc: unknown): NodeIpamResponse<K> | Problem {
  if (!isObject(doc)) return { problem: 'response: not a JSON object' };
  if (doc.v !== NODE_IPAM_PROTOCOL)
    return {
      problem: `response: protocol version ${quote(doc.v)}, this plugin speaks ${NODE_IPAM_PROTOCOL} (plugin and agent of different releases?)`,
    };
  if (doc.ok === false) {
    const e = doc.error;
    if (!isObject(e) || !NODE_IPAM_ERROR_KINDS.includes(e.kind as NodeIpamErrorKind) || !isString(e.message))
      return { problem: 'response.error: needs kind (one of the known kinds) and message' };
    return doc as unknown as NodeIpamResponse<K>;
  }
  if (doc.ok !== true) return { problem: 'response.ok: not a boolean' };
  const problem = outcomeProblem(op, doc.outcome);
  return problem ? { problem: `response.${problem}` } : (doc as unknown as NodeIpamResponse<K>);
}
