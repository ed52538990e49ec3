/**
 * The texts of a failed assignment (docs/design-core.md §Failures that explain themselves): each
 * names the pool(s) tried, the reason and the next step, in that order, so the first 300
 * characters carry all three. The runtime copies the CNI error into the pod's
 * FailedCreatePodSandBox event after ~170 characters of its own and boundMessage
 * (core/errors/bounded-message.ts) keeps a text's head: what comes first survives. A list (the
 * pools passed over and why) comes after the next step, bounded to {@link LISTED_POOLS} names.
 * Pure; built here once, carried unchanged by the node IPAM service, the agent and the plugin.
 */
import type { IPFamily } from '../address/ip.ts';

/** Pools a text names one by one; past it, "and N more" (the list must not push out the rest). */
const LISTED_POOLS = 4;

/** `IP pool "a"` or `IP pools "a", "b"` (at most {@link LISTED_POOLS}, then "and N more"). */
function poolsPhrase(names: readonly string[]): string {
  const shown = names.slice(0, LISTED_POOLS).map((n) => JSON.stringify(n));
  const more = names.length > LISTED_POOLS ? ` and ${names.length - LISTED_POOLS} more` : '';
  return `IP pool${names.length === 1 ? '' : 's'} ${shown.join(', ')}${more}`;
}

/** Settings an exhaustion text names (IPAMConfig `default`). */
export interface ExhaustionFacts {
  family: IPFamily;
  node: string;
  /** The pools tried, in preference order (never empty). */
  pools: readonly string[];
  autoAllocateBlocks: boolean;
  strictAffinity: boolean;
}

const IPAM_CONFIG = 'IPAMConfig "default"';

function borrowClause(strictAffinity: boolean): string {
  return strictAffinity ? 'strictAffinity forbids borrowing' : 'nothing free to borrow';
}

/**
 * Every allowed pool is full for this node: no free address in the node's blocks, no unclaimed
 * block (or autoAllocateBlocks is false), nothing to borrow.
 */
export function exhaustedText(f: ExhaustionFacts): string {
  if (!f.autoAllocateBlocks)
    return `${poolsPhrase(f.pools)} exhausted for node "${f.node}" (IPv${f.family}): its blocks are full, autoAllocateBlocks is false, ${borrowClause(f.strictAffinity)}. Next step: set autoAllocateBlocks to true in ${IPAM_CONFIG}, add an IPPool, or delete pods on the node.`;
  return `${poolsPhrase(f.pools)} exhausted for node "${f.node}" (IPv${f.family}): every block full, no unclaimed block left, ${borrowClause(f.strictAffinity)}. Next step: add or enlarge an IPPool this namespace and node may use, or delete pods; ipamctl show lists the pools.`;
}

/** As {@link exhaustedText}, and the node holds `held` blocks: the maxBlocksPerNode limit. */
export function blockLimitText(f: ExhaustionFacts & { held: number; max: number }): string {
  const step = f.strictAffinity
    ? `raise maxBlocksPerNode or set strictAffinity to false in ${IPAM_CONFIG}, or delete pods on the node`
    : `raise maxBlocksPerNode in ${IPAM_CONFIG}, add an IPPool, or delete pods on the node`;
  return `${poolsPhrase(f.pools)}: node "${f.node}" (IPv${f.family}) is at maxBlocksPerNode (${f.max} block${f.max === 1 ? '' : 's'}, all full) and ${borrowClause(f.strictAffinity)}. Next step: ${step}.`;
}

/** Why a pool was passed over for a pod, as {@link noPoolText} lists it. */
export type PoolExclusion =
  'disabled' | 'deleting' | 'Manual' | 'nodeSelector' | 'namespaceSelector' | { shadowedBy: string };

function exclusionText(why: PoolExclusion): string {
  if (typeof why === 'object') return `overlaps older pool "${why.shadowedBy}"`;
  switch (why) {
    case 'disabled':
      return 'spec.disabled';
    case 'deleting':
      return 'being deleted';
    case 'Manual':
      return 'Manual: used only when requested';
    case 'nodeSelector':
      return 'nodeSelector excludes the node';
    case 'namespaceSelector':
      return 'namespaceSelector excludes the namespace';
  }
}

/** Who asks: the node and, when known, the pod's namespace. */
export interface Asker {
  family: IPFamily;
  node: string;
  namespace?: string;
}

function whoPhrase(a: Asker): string {
  return a.namespace !== undefined ? `namespace "${a.namespace}" on node "${a.node}"` : `node "${a.node}"`;
}

/**
 * No pool of the family may serve this pod. When pools that would match are disabled (or being
 * deleted), the text leads with them (`disabled`: the caller's reason is PoolDisabled); else it
 * says no pool matches. The pools passed over follow the next step, each with why.
 */
export function noPoolText(
  a: Asker,
  passedOver: readonly { pool: string; why: PoolExclusion }[],
): { disabled: boolean; message: string } {
  const off = passedOver.filter((p) => p.why === 'disabled' || p.why === 'deleting').map((p) => p.pool);
  const listed = [...passedOver]
    .sort((x, y) => Number(off.includes(y.pool)) - Number(off.includes(x.pool)))
    .slice(0, LISTED_POOLS)
    .map((p) => `"${p.pool}" (${exclusionText(p.why)})`);
  const more = passedOver.length > LISTED_POOLS ? ` and ${passedOver.length - LISTED_POOLS} more` : '';
  const tried = passedOver.length > 0 ? ` Pools passed over: ${listed.join(', ')}${more}.` : '';
  if (off.length > 0)
    return {
      disabled: true,
      message: `${poolsPhrase(off)} disabled or being deleted, and no other IPv${a.family} pool matches ${whoPhrase(a)}. Next step: set spec.disabled to false on ${poolsPhrase(off)}, or create an IPPool for this namespace and node.${tried}`,
    };
  if (passedOver.length === 0)
    return {
      disabled: false,
      message: `no IPv${a.family} IP pool exists for ${whoPhrase(a)}. Next step: create an IPv${a.family} IPPool, or ask for the other IP family only.`,
    };
  return {
    disabled: false,
    message: `no IPv${a.family} IP pool matches ${whoPhrase(a)}. Next step: create an IPPool that selects this namespace and node, relabel the namespace or node, or request a Manual pool by annotation.${tried}`,
  };
}

/** Why a pool the pod (or the netconf) requested by name or CIDR is refused. */
export type RequestRefusal =
  | { kind: 'missing'; ref: string }
  | { kind: 'shadowed'; pool: string; by: string }
  | { kind: 'disabled' | 'deleting'; pool: string }
  | { kind: 'namespaceSelector' | 'nodeSelector'; pool: string };

/** The text of a refused requested pool (the caller prefixes where the request came from). */
export function requestRefusedText(r: RequestRefusal, a: Omit<Asker, 'family'>): string {
  switch (r.kind) {
    case 'missing':
      return `requested IP pool ${JSON.stringify(r.ref)} does not exist. Next step: name an existing pool (kubectl get ippools) or create it.`;
    case 'shadowed':
      return `requested IP pool "${r.pool}" overlaps older IP pool "${r.by}" and is not used. Next step: request "${r.by}", or recreate "${r.pool}" with a CIDR no other pool overlaps.`;
    case 'disabled':
      return `requested IP pool "${r.pool}" is disabled (spec.disabled). Next step: set spec.disabled to false on it, or request another pool.`;
    case 'deleting':
      return `requested IP pool "${r.pool}" is being deleted. Next step: request another pool.`;
    case 'namespaceSelector': {
      const ns = a.namespace !== undefined ? ` "${a.namespace}"` : '';
      return `requested IP pool "${r.pool}" does not allow namespace${ns} (namespaceSelector). Next step: request a pool whose namespaceSelector matches the namespace, or label the namespace to match.`;
    }
    case 'nodeSelector':
      return `requested IP pool "${r.pool}" does not allow node "${a.node}" (nodeSelector). Next step: request a pool whose nodeSelector matches the node, or schedule the pod onto a node it selects.`;
  }
}

/**
 * A static address another handle holds. The text lands in the requester's pod Event, readable in
 * the requester's namespace, so the holder's handle (it carries the container ID) and pod are
 * named only when the holder's pod is in `requester`'s namespace; else the text says "held by a pod
 * in another namespace" (or, when the holder records no pod, "by an attachment with no pod") and
 * its next step points a cluster administrator at `ipamctl show --ip`.
 * @param requester the namespace of the pod asking; undefined when the call names no pod (then no
 *   holder is named either)
 */
export function takenText(f: {
  address: string;
  pool: string;
  block: string;
  holder: { handle: string; namespace?: string | undefined; pod?: string | undefined };
  requester: string | undefined;
}): string {
  const head = `${f.address} in IP pool "${f.pool}" is taken by another attachment.`;
  const { namespace, pod } = f.holder;
  if (namespace !== undefined && namespace === f.requester) {
    const held = pod !== undefined ? `${f.holder.handle} (pod ${namespace}/${pod})` : f.holder.handle;
    return `${head} Next step: request a free address, or release it if its pod is gone (ipamctl release --ip ${f.address}). Held by ${held} in block ${f.block}.`;
  }
  const who =
    namespace === undefined
      ? 'an attachment with no pod'
      : f.requester === undefined
        ? 'a pod (named only to its namespace)'
        : 'a pod in another namespace';
  return `${head} Next step: request a free address, or ask a cluster admin to check it (ipamctl show --ip ${f.address}) and release it if its pod is gone. Held by ${who}, block ${f.block}.`;
}
