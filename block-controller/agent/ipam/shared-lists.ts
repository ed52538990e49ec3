/**
 * LISTs shared by concurrent callers (the view's confirmation LISTs, view-datastore.ts): per
 * selector at most one in flight and one pending — the callers that arrive while one is in flight
 * share the next, sent once it has answered (so after they missed). Each caller gets its own copy
 * of the answer; a caller's signal rejects its own wait only.
 */
import { abortable } from 'blockipam/core';
import type { IPAMBlock, ListOptions } from 'blockipam/core';

/** @param send one LIST (without a signal: it serves every caller sharing it) */
export function sharedLists(
  send: (options: Omit<ListOptions, 'signal'>) => Promise<IPAMBlock[]>,
): (options: ListOptions | undefined) => Promise<IPAMBlock[]> {
  const slots = new Map<string, { running?: Promise<IPAMBlock[]>; pending?: Promise<IPAMBlock[]> }>();
  return (options) => {
    const { signal, ...shared } = options ?? {};
    signal?.throwIfAborted();
    const k = JSON.stringify(shared.labelSelector ?? null);
    let slot = slots.get(k);
    if (!slot) slots.set(k, (slot = {}));
    const s = slot;
    const start = (): Promise<IPAMBlock[]> => {
      const p = send(shared).finally(() => {
        if (s.running === p) s.running = undefined;
        if (!s.running && !s.pending) slots.delete(k);
      });
      s.running = p;
      return p;
    };
    let answer: Promise<IPAMBlock[]>;
    if (s.pending) answer = s.pending;
    else if (s.running) {
      const settled = s.running.then(
        () => undefined,
        () => undefined,
      );
      answer = s.pending = settled.then(() => {
        s.pending = undefined;
        return start();
      });
    } else answer = start();
    return abortable(
      answer.then((list) => list.map((b) => structuredClone(b))),
      signal,
    );
  };
}
