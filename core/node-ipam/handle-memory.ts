/**
 * What the node IPAM service remembers of its own writes (docs/design-core.md §Node IPAM
 * service), so that over a `ds` that may lag another writer (NodeIpamOptions.authority) a DEL
 * knows when `ds` alone accounts for a handle: the addresses it allocated to each handle, and the
 * handles it released lately. Both bounded; forgetting only ever costs a DEL one more LIST.
 */

// 4,096: a node runs ~110 pods by default (a few hundred at most); past that the oldest handles
// are forgotten, and their DELs confirm at the API server (safe, 1 LIST).
const ALLOCATED_MAX = 4_096;

/** How many handles this service released are remembered (FIFO), and for how long (ms). */
const RELEASED_MAX = 4_096;
// 10 min: longer than kubelet's gap between a pod's two DELs (sandbox stop, then removal).
const RELEASED_TTL_MS = 10 * 60_000;

/** handle → the bare addresses this service's ADD allocated to it (FIFO of {@link ALLOCATED_MAX}). */
export interface AllocatedHandles {
  set(handle: string, addresses: readonly string[]): void;
  /** The addresses, or undefined when this service did not allocate the handle (or forgot). */
  get(handle: string): readonly string[] | undefined;
  forget(handle: string): void;
}

export function allocatedHandles(): AllocatedHandles {
  const by = new Map<string, readonly string[]>();
  return {
    set(handle, addresses) {
      by.delete(handle); // re-inserted last: FIFO by latest allocation
      by.set(handle, [...addresses]);
      while (by.size > ALLOCATED_MAX) by.delete(by.keys().next().value!);
    },
    get: (handle) => by.get(handle),
    forget: (handle) => void by.delete(handle),
  };
}

/** The handles this service released lately (FIFO of {@link RELEASED_MAX}, each for 10 min). */
export interface ReleasedHandles {
  add(handle: string): void;
  has(handle: string): boolean;
  forget(handle: string): void;
}

/** @param clock ms since epoch (core's allocator clock) */
export function releasedHandles(clock: () => number): ReleasedHandles {
  const at = new Map<string, number>();
  return {
    add(handle) {
      at.delete(handle); // re-inserted last: FIFO by latest release
      at.set(handle, clock());
      while (at.size > RELEASED_MAX) at.delete(at.keys().next().value!);
    },
    has(handle) {
      const t = at.get(handle);
      if (t === undefined) return false;
      if (clock() - t < RELEASED_TTL_MS) return true;
      at.delete(handle);
      return false;
    },
    forget: (handle) => void at.delete(handle),
  };
}
