/**
 * What this agent's own block writes did to each handle (docs/design-agent.md §IPAM server), so
 * that a DEL knows when the view alone accounts for a handle (core's NodeIpamOptions.written):
 * per handle, the addresses the agent's writes allocated to it, or none once they released them
 * (kept 10 min). The view derives it from every block it writes, comparing the block as written
 * with its own copy at the resourceVersion the write was computed on — a write whose base it has
 * no copy of is not recorded, which only costs a later DEL of its handles one LIST. Bounded: past
 * 4,096 handles the oldest are forgotten, with the same cost.
 */
import { addressTextAt, cidrOf } from 'blockipam/core';
import type { IPAMBlock } from 'blockipam/core';

// 4,096: a node runs ~110 pods by default (a few hundred at most); past that the oldest handles
// are forgotten, and their DELs confirm at the API server (safe, 1 LIST).
const MAX_HANDLES = 4_096;
// 10 min: longer than kubelet's gap between a pod's two DELs (sandbox stop, then removal).
const RELEASED_TTL_MS = 10 * 60_000;

export interface HandleWrites {
  /**
   * The addresses the agent's writes allocated to `handle` (bare), `[]` when they released them
   * within the last 10 min, undefined when they did neither (or it was forgotten).
   */
  get(handle: string): readonly string[] | undefined;
  /** Records the write of `written`, computed on `base` (undefined: `written` was created). */
  record(base: IPAMBlock | undefined, written: IPAMBlock): void;
}

/** @param clock ms since epoch; default Date.now */
export function handleWrites(clock: () => number = Date.now): HandleWrites {
  const by = new Map<string, { addresses: readonly string[]; atMs: number }>();
  const get = (handle: string): readonly string[] | undefined => {
    const entry = by.get(handle);
    if (entry === undefined) return undefined;
    if (entry.addresses.length > 0 || clock() - entry.atMs < RELEASED_TTL_MS) return entry.addresses;
    by.delete(handle);
    return undefined;
  };
  const set = (handle: string, addresses: readonly string[]): void => {
    by.delete(handle); // re-inserted last: FIFO by latest write
    by.set(handle, { addresses, atMs: clock() });
    while (by.size > MAX_HANDLES) by.delete(by.keys().next().value!);
  };
  return {
    get,
    record(base, written) {
      const cidr = cidrOf(written);
      const before = base?.spec.allocations ?? {};
      const after = written.spec.allocations;
      const changes = new Map<string, { added: string[]; removed: string[] }>();
      const of = (handle: string) => {
        let c = changes.get(handle);
        if (!c) changes.set(handle, (c = { added: [], removed: [] }));
        return c;
      };
      for (const [ordinal, a] of Object.entries(after))
        if (before[ordinal]?.handle !== a.handle)
          of(a.handle).added.push(addressTextAt(cidr, Number(ordinal)));
      for (const [ordinal, a] of Object.entries(before))
        if (after[ordinal]?.handle !== a.handle)
          of(a.handle).removed.push(addressTextAt(cidr, Number(ordinal)));
      for (const [handle, { added, removed }] of changes) {
        const kept = (get(handle) ?? []).filter((address) => !removed.includes(address));
        set(handle, [...kept, ...added.filter((address) => !kept.includes(address))]);
      }
    },
  };
}
