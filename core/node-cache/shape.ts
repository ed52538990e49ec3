/**
 * Structural checks of a parsed node cache document: every field a reader (the allocator, the
 * STATUS check, the annotation reader) touches has the type it expects, so hostile or corrupt
 * input is refused with the first wrong field named, and never reaches code that would throw on
 * it. The objects' own semantics (a block's CIDR, its invariants) came from the API server, whose
 * schemas checked them; what is checked here is what JavaScript would trip over.
 *
 * Written for a cold process (the plugin runs each check once, mostly in the interpreter):
 * hand-written rather than ajv (no schema compiler on the plugin's hot path), straight-line
 * code with plain loops and no closures per field, and paths built only for the problem
 * reported. A first version made of combinators cost ~6 ms per 95 KiB document in the Bun
 * executable; see docs/benchmarks.md "Node cache transport" for the current figure.
 *
 * Each check returns undefined, or the problem relative to the value checked (`.spec.cidr: must
 * be a string`, `: must be an object`); the caller prefixes its own path.
 */

/** A problem relative to the checked value, or undefined. */
type Problem = string | undefined;

export const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const OBJECT = ': must be an object';
const STRING = ': must be a string';
const INTEGER = ': must be an integer';
const BOOLEAN = ': must be a boolean';
const ARRAY = ': must be an array';

/** A map of strings (labels, annotations). */
function stringMap(v: unknown): Problem {
  if (!isRecord(v)) return ': must be an object of strings';
  for (const key in v) if (typeof v[key] !== 'string') return `.${key}${STRING}`;
  return undefined;
}

/** `.field` + problem when the optional field is present and not a string map. */
function optionalStringMap(v: Record<string, unknown>, field: string): Problem {
  const problem = v[field] === undefined ? undefined : stringMap(v[field]);
  return problem && `.${field}${problem}`;
}

function optionalString(v: Record<string, unknown>, field: string): Problem {
  const value = v[field];
  return value === undefined || typeof value === 'string' ? undefined : `.${field}${STRING}`;
}

function optionalInt(v: Record<string, unknown>, field: string): Problem {
  const value = v[field];
  return value === undefined || Number.isSafeInteger(value) ? undefined : `.${field}${INTEGER}`;
}

function optionalBool(v: Record<string, unknown>, field: string): Problem {
  const value = v[field];
  return value === undefined || typeof value === 'boolean' ? undefined : `.${field}${BOOLEAN}`;
}

/** metadata: name (and resourceVersion when `withVersion`), uid, timestamps, labels, annotations. */
function metadata(v: unknown, withVersion: boolean): Problem {
  if (!isRecord(v)) return `.metadata${OBJECT}`;
  let problem: Problem;
  if (typeof v.name !== 'string') problem = `.name${STRING}`;
  else if (withVersion && typeof v.resourceVersion !== 'string') problem = `.resourceVersion${STRING}`;
  else
    problem =
      optionalString(v, 'uid') ??
      optionalString(v, 'creationTimestamp') ??
      optionalString(v, 'deletionTimestamp') ??
      optionalStringMap(v, 'labels') ??
      optionalStringMap(v, 'annotations');
  return problem && `.metadata${problem}`;
}

function allocation(v: unknown): Problem {
  if (!isRecord(v)) return OBJECT;
  if (typeof v.handle !== 'string') return `.handle${STRING}`;
  if (typeof v.node !== 'string') return `.node${STRING}`;
  if (typeof v.allocatedAt !== 'string') return `.allocatedAt${STRING}`;
  if (!Number.isSafeInteger(v.sequence)) return `.sequence${INTEGER}`;
  return (
    optionalString(v, 'network') ??
    optionalString(v, 'namespace') ??
    optionalString(v, 'pod') ??
    optionalString(v, 'podUID')
  );
}

/** An IPAMBlock as the allocator reads it. */
export function block(v: unknown): Problem {
  if (!isRecord(v)) return OBJECT;
  const meta = metadata(v.metadata, true);
  if (meta) return meta;
  const spec = v.spec;
  if (!isRecord(spec)) return `.spec${OBJECT}`;
  if (typeof spec.cidr !== 'string') return `.spec.cidr${STRING}`;
  if (spec.affinity !== null && typeof spec.affinity !== 'string') return `.spec.affinity${STRING}`;
  if (typeof spec.affinityClaimTime !== 'string') return `.spec.affinityClaimTime${STRING}`;
  if (!Number.isSafeInteger(spec.sequence)) return `.spec.sequence${INTEGER}`;
  const allocations = spec.allocations;
  if (!isRecord(allocations)) return `.spec.allocations${OBJECT}`;
  for (const key in allocations) {
    const problem = allocation(allocations[key]);
    if (problem) return `.spec.allocations[${JSON.stringify(key)}]${problem}`;
  }
  const freed = spec.freed;
  if (!Array.isArray(freed)) return `.spec.freed${ARRAY}`;
  for (let i = 0; i < freed.length; i++) {
    const item: unknown = freed[i];
    if (!isRecord(item)) return `.spec.freed[${i}]${OBJECT}`;
    if (!Number.isSafeInteger(item.ordinal)) return `.spec.freed[${i}].ordinal${INTEGER}`;
    if (typeof item.releasedAt !== 'string') return `.spec.freed[${i}].releasedAt${STRING}`;
  }
  return undefined;
}

const OPERATORS = new Set(['In', 'NotIn', 'Exists', 'DoesNotExist']);

function selector(v: unknown): Problem {
  if (!isRecord(v)) return OBJECT;
  const labels = optionalStringMap(v, 'matchLabels');
  if (labels) return labels;
  const expressions = v.matchExpressions;
  if (expressions === undefined) return undefined;
  if (!Array.isArray(expressions)) return `.matchExpressions${ARRAY}`;
  for (let i = 0; i < expressions.length; i++) {
    const item: unknown = expressions[i];
    const at = `.matchExpressions[${i}]`;
    if (!isRecord(item)) return `${at}${OBJECT}`;
    if (typeof item.key !== 'string') return `${at}.key${STRING}`;
    if (!OPERATORS.has(item.operator as string))
      return `${at}.operator: must be In, NotIn, Exists or DoesNotExist`;
    const values = item.values;
    if (values === undefined) continue;
    if (!Array.isArray(values)) return `${at}.values${ARRAY}`;
    for (let j = 0; j < values.length; j++)
      if (typeof values[j] !== 'string') return `${at}.values[${j}]${STRING}`;
  }
  return undefined;
}

/** An IPPool as pool choice and STATUS read it. */
export function pool(v: unknown): Problem {
  if (!isRecord(v)) return OBJECT;
  const meta = metadata(v.metadata, false);
  if (meta) return meta;
  const spec = v.spec;
  if (!isRecord(spec)) return `.spec${OBJECT}`;
  if (typeof spec.cidr !== 'string') return `.spec.cidr${STRING}`;
  for (const field of ['nodeSelector', 'namespaceSelector']) {
    const problem = spec[field] === undefined ? undefined : selector(spec[field]);
    if (problem) return `.spec.${field}${problem}`;
  }
  if (
    spec.assignmentMode !== undefined &&
    spec.assignmentMode !== 'Automatic' &&
    spec.assignmentMode !== 'Manual'
  )
    return '.spec.assignmentMode: must be Automatic or Manual';
  const status = v.status;
  if (status !== undefined && !isRecord(status)) return `.status${OBJECT}`;
  const problem = optionalInt(spec, 'blockSize') ?? optionalBool(spec, 'disabled');
  if (problem) return `.spec${problem}`;
  const blocks = status === undefined ? undefined : optionalInt(status, 'blocks');
  return blocks && `.status${blocks}`;
}

/** IPAMConfig `default` (null is allowed by the caller). */
export function config(v: unknown): Problem {
  if (!isRecord(v)) return ': must be an object or null';
  const meta = metadata(v.metadata, false);
  if (meta) return meta;
  const spec = v.spec;
  if (!isRecord(spec)) return `.spec${OBJECT}`;
  const problem =
    optionalBool(spec, 'strictAffinity') ??
    optionalBool(spec, 'autoAllocateBlocks') ??
    optionalInt(spec, 'maxBlocksPerNode') ??
    optionalInt(spec, 'ipCooldownSeconds') ??
    optionalInt(spec, 'emptyBlockReleaseSeconds') ??
    optionalInt(spec, 'leakGracePeriodSeconds');
  return problem && `.spec${problem}`;
}

/** An IPReservation. */
export function reservation(v: unknown): Problem {
  if (!isRecord(v)) return OBJECT;
  const meta = metadata(v.metadata, false);
  if (meta) return meta;
  const spec = v.spec;
  if (!isRecord(spec)) return `.spec${OBJECT}`;
  const cidrs = spec.reservedCIDRs;
  if (!Array.isArray(cidrs)) return `.spec.reservedCIDRs${ARRAY}`;
  for (let i = 0; i < cidrs.length; i++)
    if (typeof cidrs[i] !== 'string') return `.spec.reservedCIDRs[${i}]${STRING}`;
  return undefined;
}

/** A cached pod entry. */
function cachedPod(v: unknown): Problem {
  if (!isRecord(v)) return OBJECT;
  if (typeof v.uid !== 'string') return `.uid${STRING}`;
  if (typeof v.nodeName !== 'string') return `.nodeName${STRING}`;
  const problem = stringMap(v.annotations);
  return problem && `.annotations${problem}`;
}

/** A cached namespace entry. */
function cachedNamespace(v: unknown): Problem {
  if (!isRecord(v)) return OBJECT;
  if (typeof v.uid !== 'string') return `.uid${STRING}`;
  const problem = stringMap(v.labels);
  if (problem) return `.labels${problem}`;
  const annotations = stringMap(v.annotations);
  return annotations && `.annotations${annotations}`;
}

/** `field[i]` + problem for the first item of the array `v[field]` that `check` refuses. */
function eachItem(v: Record<string, unknown>, field: string, check: (item: unknown) => Problem): Problem {
  const list = v[field];
  if (!Array.isArray(list)) return `${field}${ARRAY}`;
  for (let i = 0; i < list.length; i++) {
    const problem = check(list[i]);
    if (problem) return `${field}[${i}]${problem}`;
  }
  return undefined;
}

/** `field["key"]` + problem for the first value of the object `v[field]` that `check` refuses. */
function eachValue(v: Record<string, unknown>, field: string, check: (item: unknown) => Problem): Problem {
  const map = v[field];
  if (!isRecord(map)) return `${field}${OBJECT}`;
  for (const key in map) {
    const problem = check(map[key]);
    if (problem) return `${field}[${JSON.stringify(key)}]${problem}`;
  }
  return undefined;
}

/** The whole document after kind and version matched: the first wrong field (full path), or undefined. */
export function documentProblem(v: Record<string, unknown>): Problem {
  const cluster = v.cluster;
  if (!isRecord(cluster)) return `cluster${OBJECT}`;
  if (typeof cluster.uid !== 'string') return `cluster.uid${STRING}`;
  const node = v.node;
  if (!isRecord(node)) return `node${OBJECT}`;
  if (typeof node.name !== 'string') return `node.name${STRING}`;
  if (typeof node.uid !== 'string') return `node.uid${STRING}`;
  const labels = stringMap(node.labels);
  if (labels) return `node.labels${labels}`;
  if (!Number.isSafeInteger(v.heartbeatAtMs)) return `heartbeatAtMs${INTEGER}`;
  if (!Number.isSafeInteger(v.generation)) return `generation${INTEGER}`;
  const writer = v.writer;
  if (!isRecord(writer)) return `writer${OBJECT}`;
  if (typeof writer.name !== 'string') return `writer.name${STRING}`;
  if (!Number.isSafeInteger(writer.pid)) return `writer.pid${INTEGER}`;
  const conf = v.config === null ? undefined : config(v.config);
  if (conf) return `config${conf}`;
  return (
    eachItem(v, 'blocks', block) ??
    eachItem(v, 'pools', pool) ??
    eachItem(v, 'reservations', reservation) ??
    eachValue(v, 'pods', cachedPod) ??
    eachValue(v, 'namespaces', cachedNamespace)
  );
}
