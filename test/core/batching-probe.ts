/**
 * An inner datastore for the batching decorator's tests: the memory datastore, with its block
 * GETs, UPDATEs and DELETEs counted, GETs and UPDATEs optionally held at a gate, UPDATEs failed with a given error, or preceded
 * by a foreign write (another writer's UPDATE of the same block, so the held one meets a 409).
 */
import { withBlocks } from 'blockipam/core';
import type { Datastore, IPAMBlock, MemoryDatastore, ResourceStore } from 'blockipam/core';

/** A promise with its resolve, for gates and "it happened" events. */
export interface Deferred<T = void> {
  promise: Promise<T>;
  resolve(value: T): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

export interface Probe {
  /** The instrumented datastore to wrap in the decorator. */
  ds: Datastore;
  /** Block GETs, UPDATEs and DELETEs that reached the probe. */
  counts: { gets: number; updates: number; deletes: number };
  /** When set, every block GET waits for it (after being counted). */
  getGate: Promise<void> | undefined;
  /** When set, every block UPDATE waits for it (after being counted). */
  gate: Promise<void> | undefined;
  /** Told each time a block UPDATE arrives (before the gate). */
  onUpdate: (block: IPAMBlock) => void;
  /** When it returns an error for an arriving UPDATE, that UPDATE fails with it (after the gate). */
  failWith: (block: IPAMBlock) => Error | undefined;
  /** When it returns true for an arriving UPDATE, another writer changes the block first. */
  foreignFirst: (block: IPAMBlock) => boolean;
  /** Foreign writes made. */
  foreignWrites: number;
}

/** A foreign writer's change: an annotation touch (a real change, so the resourceVersion moves). */
export async function foreignTouch(inner: MemoryDatastore, name: string): Promise<void> {
  const current = await inner.blocks.get(name);
  if (!current) return;
  const n = Number(current.metadata.annotations?.['test/touch'] ?? '0') + 1;
  await inner.blocks.update({
    ...current,
    metadata: {
      ...current.metadata,
      annotations: { ...current.metadata.annotations, 'test/touch': String(n) },
    },
  });
}

export function probe(inner: MemoryDatastore): Probe {
  const p: Probe = {
    ds: undefined as unknown as Datastore,
    counts: { gets: 0, updates: 0, deletes: 0 },
    getGate: undefined,
    gate: undefined,
    onUpdate: () => {},
    failWith: () => undefined,
    foreignFirst: () => false,
    foreignWrites: 0,
  };
  const b = inner.blocks;
  const blocks: ResourceStore<IPAMBlock> = {
    get: async (name, o) => {
      p.counts.gets += 1;
      if (p.getGate) await p.getGate;
      return b.get(name, o);
    },
    list: (o) => b.list(o),
    listMetadata: (o) => b.listMetadata(o),
    listPage: (o) => b.listPage(o),
    create: (object, o) => b.create(object, o),
    update: async (block, o) => {
      p.counts.updates += 1;
      p.onUpdate(block);
      if (p.gate) await p.gate;
      const error = p.failWith(block);
      if (error) throw error;
      if (p.foreignFirst(block)) {
        p.foreignWrites += 1;
        await foreignTouch(inner, block.metadata.name);
      }
      return b.update(block, o);
    },
    delete: (name, pre, o) => {
      p.counts.deletes += 1;
      return b.delete(name, pre, o);
    },
  };
  p.ds = withBlocks(inner, blocks);
  return p;
}
