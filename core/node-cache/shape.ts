/**
 * Structural checks of a parsed node cache document: every field a reader (the allocator, the
 * STATUS check, the annotation reader) touches has the type it expects, so hostile or corrupt
 * input is refused with the first wrong field named, and never reaches code that would throw on
 * it. Hand-written rather than ajv: the plugin's hot path loads no schema compiler.
 * The objects' own semantics (a block's CIDR, its invariants) came from the API server, whose
 * schemas checked them; what is checked here is what JavaScript would trip over.
 */

/** A problem: the path of the first wrong field and what it should be. */
type Problem = string | undefined;

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function str(v: unknown, path: string): Problem {
  return typeof v === 'string' ? undefined : `${path}: must be a string`;
}

function int(v: unknown, path: string): Problem {
  return Number.isSafeInteger(v) ? undefined : `${path}: must be an integer`;
}

function bool(v: unknown, path: string): Problem {
  return typeof v === 'boolean' ? undefined : `${path}: must be a boolean`;
}

/** The object's fields, or none when it is not an object (its own check reports that). */
function fields(v: unknown): Record<string, unknown> {
  return isRecord(v) ? v : {};
}

function optional(v: unknown, path: string, check: (v: unknown, path: string) => Problem): Problem {
  return v === undefined ? undefined : check(v, path);
}

/** A map of strings (labels, annotations). */
export function stringMap(v: unknown, path: string): Problem {
  if (!isRecord(v)) return `${path}: must be an object of strings`;
  for (const [key, value] of Object.entries(v))
    if (typeof value !== 'string') return `${path}.${key}: must be a string`;
  return undefined;
}

function each(v: unknown, path: string, check: (item: unknown, path: string) => Problem): Problem {
  if (!Array.isArray(v)) return `${path}: must be an array`;
  for (let i = 0; i < v.length; i++) {
    const problem = check(v[i], `${path}[${i}]`);
    if (problem) return problem;
  }
  return undefined;
}

function eachValue(v: unknown, path: string, check: (item: unknown, path: string) => Problem): Problem {
  if (!isRecord(v)) return `${path}: must be an object`;
  for (const [key, item] of Object.entries(v)) {
    const problem = check(item, `${path}[${JSON.stringify(key)}]`);
    if (problem) return problem;
  }
  return undefined;
}

function first(...problems: (() => Problem)[]): Problem {
  for (const problem of problems) {
    const found = problem();
    if (found) return found;
  }
  return undefined;
}

/** metadata: name (and resourceVersion where `withVersion`), labels/annotations maps. */
function metadata(v: unknown, path: string, withVersion: boolean): Problem {
  if (!isRecord(v)) return `${path}: must be an object`;
  return first(
    () => str(v.name, `${path}.name`),
    () => (withVersion ? str(v.resourceVersion, `${path}.resourceVersion`) : undefined),
    () => optional(v.uid, `${path}.uid`, str),
    () => optional(v.creationTimestamp, `${path}.creationTimestamp`, str),
    () => optional(v.deletionTimestamp, `${path}.deletionTimestamp`, str),
    () => optional(v.labels, `${path}.labels`, stringMap),
    () => optional(v.annotations, `${path}.annotations`, stringMap),
  );
}

function allocation(v: unknown, path: string): Problem {
  if (!isRecord(v)) return `${path}: must be an object`;
  return first(
    () => str(v.handle, `${path}.handle`),
    () => str(v.node, `${path}.node`),
    () => str(v.allocatedAt, `${path}.allocatedAt`),
    () => int(v.sequence, `${path}.sequence`),
    ...(['network', 'namespace', 'pod', 'podUID'] as const).map(
      (key) => () => optional(v[key], `${path}.${key}`, str),
    ),
  );
}

function freed(v: unknown, path: string): Problem {
  if (!isRecord(v)) return `${path}: must be an object`;
  return first(
    () => int(v.ordinal, `${path}.ordinal`),
    () => str(v.releasedAt, `${path}.releasedAt`),
  );
}

/** An IPAMBlock as the allocator reads it. */
export function block(v: unknown, path: string): Problem {
  if (!isRecord(v)) return `${path}: must be an object`;
  const spec = fields(v.spec);
  return first(
    () => metadata(v.metadata, `${path}.metadata`, true),
    () => (isRecord(v.spec) ? undefined : `${path}.spec: must be an object`),
    () => str(spec.cidr, `${path}.spec.cidr`),
    () => (spec.affinity === null ? undefined : str(spec.affinity, `${path}.spec.affinity`)),
    () => str(spec.affinityClaimTime, `${path}.spec.affinityClaimTime`),
    () => int(spec.sequence, `${path}.spec.sequence`),
    () => eachValue(spec.allocations, `${path}.spec.allocations`, allocation),
    () => each(spec.freed, `${path}.spec.freed`, freed),
  );
}

function selector(v: unknown, path: string): Problem {
  if (!isRecord(v)) return `${path}: must be an object`;
  return first(
    () => optional(v.matchLabels, `${path}.matchLabels`, stringMap),
    () =>
      optional(v.matchExpressions, `${path}.matchExpressions`, (list, at) =>
        each(list, at, (item, p) => {
          if (!isRecord(item)) return `${p}: must be an object`;
          if (!['In', 'NotIn', 'Exists', 'DoesNotExist'].includes(item.operator as string))
            return `${p}.operator: must be In, NotIn, Exists or DoesNotExist`;
          return first(
            () => str(item.key, `${p}.key`),
            () => optional(item.values, `${p}.values`, (values, q) => each(values, q, str)),
          );
        }),
      ),
  );
}

/** An IPPool as pool choice and STATUS read it. */
export function pool(v: unknown, path: string): Problem {
  if (!isRecord(v)) return `${path}: must be an object`;
  const spec = fields(v.spec);
  return first(
    () => metadata(v.metadata, `${path}.metadata`, false),
    () => (isRecord(v.spec) ? undefined : `${path}.spec: must be an object`),
    () => str(spec.cidr, `${path}.spec.cidr`),
    () => optional(spec.blockSize, `${path}.spec.blockSize`, int),
    () => optional(spec.nodeSelector, `${path}.spec.nodeSelector`, selector),
    () => optional(spec.namespaceSelector, `${path}.spec.namespaceSelector`, selector),
    () =>
      optional(spec.assignmentMode, `${path}.spec.assignmentMode`, (m, p) =>
        m === 'Automatic' || m === 'Manual' ? undefined : `${p}: must be Automatic or Manual`,
      ),
    () => optional(spec.disabled, `${path}.spec.disabled`, bool),
    () =>
      optional(v.status, `${path}.status`, (s, p) =>
        isRecord(s) ? optional(s.blocks, `${p}.blocks`, int) : `${p}: must be an object`,
      ),
  );
}

/** IPAMConfig `default` (null allowed by the caller). */
export function config(v: unknown, path: string): Problem {
  if (!isRecord(v)) return `${path}: must be an object or null`;
  const spec = v.spec;
  if (!isRecord(spec)) return `${path}.spec: must be an object`;
  return first(
    () => metadata(v.metadata, `${path}.metadata`, false),
    ...(['strictAffinity', 'autoAllocateBlocks'] as const).map(
      (key) => () => optional(spec[key], `${path}.spec.${key}`, bool),
    ),
    ...(
      ['maxBlocksPerNode', 'ipCooldownSeconds', 'emptyBlockReleaseSeconds', 'leakGracePeriodSeconds'] as const
    ).map((key) => () => optional(spec[key], `${path}.spec.${key}`, int)),
  );
}

/** An IPReservation. */
export function reservation(v: unknown, path: string): Problem {
  if (!isRecord(v)) return `${path}: must be an object`;
  return first(
    () => metadata(v.metadata, `${path}.metadata`, false),
    () => (isRecord(v.spec) ? undefined : `${path}.spec: must be an object`),
    () => each(fields(v.spec).reservedCIDRs, `${path}.spec.reservedCIDRs`, str),
  );
}

/** A cached pod entry. */
export function cachedPod(v: unknown, path: string): Problem {
  if (!isRecord(v)) return `${path}: must be an object`;
  return first(
    () => str(v.uid, `${path}.uid`),
    () => str(v.nodeName, `${path}.nodeName`),
    () => stringMap(v.annotations, `${path}.annotations`),
  );
}

/** A cached namespace entry. */
export function cachedNamespace(v: unknown, path: string): Problem {
  if (!isRecord(v)) return `${path}: must be an object`;
  return first(
    () => str(v.uid, `${path}.uid`),
    () => stringMap(v.labels, `${path}.labels`),
    () => stringMap(v.annotations, `${path}.annotations`),
  );
}

/** The whole document after kind and version matched: the first wrong field, or undefined. */
export function documentProblem(v: Record<string, unknown>): Problem {
  const node = fields(v.node);
  return first(
    () => (isRecord(v.cluster) ? str(v.cluster.uid, 'cluster.uid') : 'cluster: must be an object'),
    () => (isRecord(v.node) ? undefined : 'node: must be an object'),
    () => str(node.name, 'node.name'),
    () => str(node.uid, 'node.uid'),
    () => stringMap(node.labels, 'node.labels'),
    () => int(v.heartbeatAtMs, 'heartbeatAtMs'),
    () => int(v.generation, 'generation'),
    () =>
      isRecord(v.writer)
        ? (str(v.writer.name, 'writer.name') ?? int(v.writer.pid, 'writer.pid'))
        : 'writer: must be an object',
    () => each(v.blocks, 'blocks', block),
    () => (v.config === null ? undefined : config(v.config, 'config')),
    () => each(v.pools, 'pools', pool),
    () => each(v.reservations, 'reservations', reservation),
    () => eachValue(v.pods, 'pods', cachedPod),
    () => eachValue(v.namespaces, 'namespaces', cachedNamespace),
  );
}

export { isRecord };
