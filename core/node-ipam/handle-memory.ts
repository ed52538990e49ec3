/**
 * What the node IPAM service remembers of its own writes (docs/design-core.md §Node IPAM
 * service), so that over a `ds` that may lag another writer (NodeIpamOptions.authority) a DEL
 * knows when `ds` alone accounts for a handle: per handle, the addresses its ADD allocated, or
 * none once its DEL released them (for 10 min). One bounded record; forgetting only ever costs a
 * DEL one more LIST.
 */

// 4,096: a node runs ~110 pods by default (a few hundred at most); past that the oldest handles
// are forgotten, and their DELs confirm at the API server (safe, 1 LIST).
const MAX_HANDLES = 4_096;
// 10 min: longer than kubelet's gap between a pod's two DELs (sandbox stop, then removal).
const RELEASED_TTL_MS = 10 * 60_000;

/** handle → what this service wrote of it (FIFO of {@link MAX_HANDLES}, by latest write). */
export interface HandleMemory {
  /** The handle's ADD allocated `addresses` (bare); `[]`: its DEL released them. */
  set(handle: string, addresses: readonly string[]): void;
  /**
   * The addresses this service allocated to the handle, `[]` when it released the handle within
   * the last 10 min, undefined when it wrote neither (or forgot).
   */
  get(handle: string): readonly string[] | undefined;
  forget(handle: string): void;
}

/** @param clock ms since epoch (core's allocator clock) */
export function handleMemory(clock: () => number): HandleMemory {
  const by = new Map<string, { addresses: readonly string[]; atMs: number }>();
  return {
    set(handle, addresses) {
      by.delete(handle); // re-inserted last: FIFO by latest write
      by.set(handle, { addresses: [...addresses], atMs: clock() });
      while (by.size > MAX_HANDLES) by.delete(by.keys().next().value!);
    },
    get(handle) {
      const entry = by.get(handle);
      if (entry === undefined) return undefined;
      if (entry.addresses.length > 0 || clock() - entry.atMs < RELEASED_TTL_MS) return entry.addresses;
      by.delete(handle);
      return undefined;
    },
    forget: (handle) => void by.delete(handle),
  };
}
