/**
 * One kind held in memory with the API server's semantics (see memory.ts): resourceVersion
 * compare-and-swap, delete preconditions, NotFound / AlreadyExists / Conflict, status subresource,
 * no-op updates keep the resourceVersion, LIST sorted by name, labels indexed.
 */
import { randomUUID } from 'node:crypto';
import { AlreadyExistsError } from '../errors/already-exists.ts';
import { ConflictError } from '../errors/conflict.ts';
import { InvalidError } from '../errors/invalid.ts';
import { NotFoundError } from '../errors/not-found.ts';
import { matchesSelector } from '../selector.ts';
import { byName, isDnsSubdomain, type KubeObject, type ObjectMeta } from '../resources.ts';
import type {
  CallOptions,
  DeletePreconditions,
  ListOptions,
  Page,
  PageOptions,
  StatusResourceStore,
} from './datastore.ts';
import { LabelIndex } from './label-index.ts';
import type { MemoryPager } from './memory-pager.ts';
import { rfc3339 } from '../time.ts';

/** Counts of operations served, for tests and benchmarks. */
export interface MemoryStats {
  reads: number;
  writes: number;
  /** Objects returned by LISTs (what a LIST would carry over the wire). */
  listed: number;
}

/** Shared resourceVersion source: one counter per datastore, like etcd's revision. */
export interface Revision {
  next(): string;
  /** The last one handed out (a LIST's resourceVersion). */
  current(): string;
}

export class MemoryResourceStore<T extends KubeObject> implements StatusResourceStore<T> {
  readonly #kind: string;
  readonly #hasStatus: boolean;
  readonly #revision: Revision;
  readonly #stats: MemoryStats;
  readonly #clock: () => number;
  readonly #pager: MemoryPager;
  readonly #objects = new Map<string, T>();
  readonly #index = new LabelIndex();

  constructor(
    kind: string,
    options: {
      hasStatus: boolean;
      revision: Revision;
      stats: MemoryStats;
      clock: () => number;
      pager: MemoryPager;
    },
  ) {
    this.#kind = kind;
    this.#hasStatus = options.hasStatus;
    this.#revision = options.revision;
    this.#stats = options.stats;
    this.#clock = options.clock;
    this.#pager = options.pager;
  }

  async get(name: string, options: CallOptions = {}): Promise<T | undefined> {
    await settle(this.#stats, 'reads', options.signal);
    const found = this.#objects.get(name);
    return found ? structuredClone(found) : undefined;
  }

  async list(options: ListOptions = {}): Promise<T[]> {
    await settle(this.#stats, 'reads', options.signal);
    const selected = this.#select(options);
    this.#stats.listed += selected.length;
    return selected.map((object) => structuredClone(object));
  }

  async listMetadata(options: ListOptions = {}): Promise<ObjectMeta[]> {
    await settle(this.#stats, 'reads', options.signal);
    const selected = this.#select(options);
    this.#stats.listed += selected.length;
    return selected.map((object) => structuredClone(object.metadata));
  }

  async listPage(options: PageOptions): Promise<Page<T>> {
    await settle(this.#stats, 'reads', options.signal);
    const page = this.#pager.page(`LIST ${this.#kind}`, options, () => ({
      items: this.#select(options),
      resourceVersion: this.#revision.current(),
    }));
    this.#stats.listed += page.items.length;
    return page;
  }

  async create(object: T, options: CallOptions = {}): Promise<T> {
    await settle(this.#stats, 'writes', options.signal);
    const name = object.metadata.name;
    this.#checkName(name);
    if (object.metadata.resourceVersion)
      throw new InvalidError(
        `${this.#kind} "${name}": metadata.resourceVersion: Invalid value: resourceVersion should not be set on objects to be created`,
      );
    if (this.#objects.has(name))
      throw new AlreadyExistsError(`${this.#kind}/${name}`, `${this.#kind} "${name}" already exists`);
    const stored = structuredClone(object) as T & { status?: unknown };
    if (this.#hasStatus) delete stored.status;
    stored.metadata = {
      ...stored.metadata,
      uid: randomUUID(),
      resourceVersion: this.#revision.next(),
      generation: 1,
      creationTimestamp: rfc3339(this.#clock()),
    };
    this.#put(stored);
    return structuredClone(stored);
  }

  async update(object: T, options: CallOptions = {}): Promise<T> {
    await settle(this.#stats, 'writes', options.signal);
    return this.#replace(object, (current, next) => (this.#hasStatus ? withStatusOf(next, current) : next));
  }

  async updateStatus(object: T, options: CallOptions = {}): Promise<T> {
    await settle(this.#stats, 'writes', options.signal);
    return this.#replace(object, (current, next) => withStatusOf(current, next));
  }

  async delete(
    name: string,
    preconditions: DeletePreconditions = {},
    options: CallOptions = {},
  ): Promise<void> {
    await settle(this.#stats, 'writes', options.signal);
    const current = this.#objects.get(name);
    if (!current) throw new NotFoundError(`${this.#kind}/${name}`, `${this.#kind} "${name}" not found`);
    const { uid, resourceVersion } = preconditions;
    if (uid !== undefined && uid !== current.metadata.uid) {
      throw new ConflictError(
        `${this.#kind}/${name}`,
        `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${current.metadata.uid}`,
      );
    }
    if (resourceVersion !== undefined && resourceVersion !== current.metadata.resourceVersion) {
      throw new ConflictError(
        `${this.#kind}/${name}`,
        `Precondition failed: ResourceVersion in precondition: ${resourceVersion}, ResourceVersion in object meta: ${current.metadata.resourceVersion}`,
      );
    }
    this.#objects.delete(name);
    this.#index.remove(name, current.metadata.labels);
  }

  /** Seeds an object as if created (no stats, no await). */
  seed(object: T): void {
    const stored = structuredClone(object);
    stored.metadata = {
      uid: randomUUID(),
      creationTimestamp: rfc3339(this.#clock()),
      generation: 1,
      ...stored.metadata,
      resourceVersion: this.#revision.next(),
    };
    this.#put(stored);
  }

  #replace(object: T, merge: (current: T, next: T) => T): T {
    const name = object.metadata.name;
    const current = this.#objects.get(name);
    if (!current) throw new NotFoundError(`${this.#kind}/${name}`, `${this.#kind} "${name}" not found`);
    const expected = object.metadata.resourceVersion;
    if (expected && expected !== current.metadata.resourceVersion) {
      throw new ConflictError(
        `${this.#kind}/${name}`,
        `Operation cannot be fulfilled on ${this.#kind} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
      );
    }
    if (object.metadata.uid && object.metadata.uid !== current.metadata.uid) {
      throw new ConflictError(
        `${this.#kind}/${name}`,
        `Precondition failed: UID in precondition: ${object.metadata.uid}, UID in object meta: ${current.metadata.uid}`,
      );
    }
    const next = merge(current, structuredClone(object));
    next.metadata = {
      ...next.metadata,
      uid: current.metadata.uid,
      creationTimestamp: current.metadata.creationTimestamp,
      resourceVersion: current.metadata.resourceVersion,
      generation: current.metadata.generation,
    };
    if (JSON.stringify(next) === JSON.stringify(current)) return structuredClone(current);
    const specChanged =
      JSON.stringify((next as { spec?: unknown }).spec) !==
      JSON.stringify((current as { spec?: unknown }).spec);
    next.metadata.resourceVersion = this.#revision.next();
    next.metadata.generation = (current.metadata.generation ?? 1) + (specChanged ? 1 : 0);
    this.#index.remove(name, current.metadata.labels);
    this.#put(next);
    return structuredClone(next);
  }

  #put(object: T): void {
    this.#objects.set(object.metadata.name, object);
    this.#index.add(object.metadata.name, object.metadata.labels);
  }

  #select(options: ListOptions): T[] {
    const names = this.#index.candidates(options.labelSelector) ?? [...this.#objects.keys()];
    const out: T[] = [];
    for (const name of names) {
      const object = this.#objects.get(name);
      if (object && matchesSelector(options.labelSelector, object.metadata.labels)) out.push(object);
    }
    return out.sort(byName);
  }

  #checkName(name: string): void {
    if (!isDnsSubdomain(name)) {
      throw new InvalidError(
        `${this.#kind} "${name}" is invalid: metadata.name: Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'`,
      );
    }
  }
}

function withStatusOf<T extends KubeObject>(target: T, source: T): T {
  const out = structuredClone(target) as T & { status?: unknown };
  const status = (source as { status?: unknown }).status;
  if (status === undefined) delete out.status;
  else out.status = structuredClone(status);
  return out;
}

/**
 * Makes every call asynchronous (as a network call is) so concurrent callers interleave. A call
 * whose `signal` has fired starts nothing (rejects with its reason, uncounted); one that fires
 * while the call is "in flight" rejects before the call takes effect, as an abandoned request.
 */
export async function settle(
  stats: MemoryStats,
  what: 'reads' | 'writes',
  signal: AbortSignal | undefined,
): Promise<void> {
  signal?.throwIfAborted();
  stats[what] += 1;
  await new Promise<void>((resolve) => setImmediate(resolve));
  signal?.throwIfAborted();
}
