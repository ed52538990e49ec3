// Leader election without an API server: the pure decisions (client-go's rules: observed time on
// the candidate's clock, transitions, release) and the elector loop over an in-memory Lease with
// compare-and-swap, on short periods.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConflictError, AlreadyExistsError } from 'blockipam/core';
import { decide, observe, releasedSpec } from '../../block-controller/controller/leader/lease.ts';
import type { Lease, LeaseSpec } from '../../block-controller/controller/leader/lease.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { LeaderElector } from '../../block-controller/controller/leader/elector.ts';
import type { LeaseStore } from '../../block-controller/controller/leader/lease-store.ts';

const lease = (spec: LeaseSpec, rv = '1'): Lease => ({ metadata: { name: 'l', resourceVersion: rv }, spec });

describe('lease decisions', () => {
  test('a valid lease of another holder is waited for, measured from when it was seen', () => {
    const seen = observe(
      undefined,
      lease({ holderIdentity: 'a', leaseDurationSeconds: 15, renewTime: 'x' }),
      1_000,
    );
    assert.deepEqual(decide('b', seen, 15_999, 15_000), { wait: { holder: 'a', expiresInMs: 1 } });
    const taken = decide('b', seen, 16_000, 15_000);
    assert.ok('take' in taken);
    assert.equal(taken.take.holderIdentity, 'b');
  });

  test('the observed time moves only when the record changes', () => {
    const first = observe(undefined, lease({ holderIdentity: 'a', renewTime: 'x' }), 1_000);
    assert.equal(
      observe(first, lease({ holderIdentity: 'a', renewTime: 'x' }, '2'), 9_000).observedAtMs,
      1_000,
    );
    assert.equal(
      observe(first, lease({ holderIdentity: 'a', renewTime: 'y' }, '3'), 9_000).observedAtMs,
      9_000,
    );
  });

  test('renewal keeps acquireTime and transitions; a new holder counts one transition', () => {
    const mine = observe(
      undefined,
      lease({ holderIdentity: 'me', acquireTime: 't0', leaseTransitions: 3 }),
      0,
    );
    const renew = decide('me', mine, 5_000, 15_000);
    assert.ok('take' in renew);
    assert.equal(renew.take.acquireTime, 't0');
    assert.equal(renew.take.leaseTransitions, 3);
    const theirs = observe(undefined, lease({ holderIdentity: 'other', leaseTransitions: 3 }), 0);
    const take = decide('me', theirs, 15_000, 15_000);
    assert.ok('take' in take);
    assert.equal(take.take.leaseTransitions, 4);
  });

  test('a released lease (no holder) is taken at once', () => {
    const released = releasedSpec({ holderIdentity: 'a', leaseDurationSeconds: 15 }, 0);
    assert.equal(released.holderIdentity, '');
    assert.ok('take' in decide('b', observe(undefined, lease(released), 0), 1, 15_000));
  });
});

/** A Lease with resourceVersion compare-and-swap. */
class MemoryLease implements LeaseStore {
  current: Lease | undefined;
  rv = 0;
  writes: string[] = [];
  get(): Promise<Lease | undefined> {
    return Promise.resolve(this.current && structuredClone(this.current));
  }
  create(spec: LeaseSpec): Promise<Lease> {
    if (this.current) return Promise.reject(new AlreadyExistsError('exists'));
    return Promise.resolve(this.#write(spec));
  }
  update(resourceVersion: string, spec: LeaseSpec): Promise<Lease> {
    if (this.current?.metadata.resourceVersion !== resourceVersion)
      return Promise.reject(new ConflictError('stale'));
    return Promise.resolve(this.#write(spec));
  }
  #write(spec: LeaseSpec): Lease {
    this.writes.push(spec.holderIdentity ?? '');
    this.current = lease(spec, String(++this.rv));
    return structuredClone(this.current);
  }
}

/** `store` as one replica sees it: every call fails while `cut()` (a network partition). */
function partitioned(store: LeaseStore, cut: () => boolean): LeaseStore {
  const unreachable = (): Promise<never> => Promise.reject(new Error('unreachable'));
  return {
    get: () => (cut() ? unreachable() : store.get()),
    create: (spec) => (cut() ? unreachable() : store.create(spec)),
    update: (rv, spec) => (cut() ? unreachable() : store.update(rv, spec)),
  };
}

/** Resolves when `signal` aborts. */
const aborted = (signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));

/** `event`, or a rejection naming `what` after `ms` (a bound on a wait, not a pause). */
async function within<T>(event: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
  });
  return Promise.race([event, late]).finally(() => clearTimeout(timer));
}

const periods = { leaseDurationMs: 2_000, renewDeadlineMs: 1_000, retryPeriodMs: 100 };
// 30 s: a bound on waits for events that take ~2 s (one lease duration), generous for a loaded box.
const BOUND_MS = 30_000;

describe('leader elector', () => {
  test('one of two leads; on shutdown it releases and the other takes over at once', async () => {
    const store = new MemoryLease();
    const leading: string[] = [];
    const waited: string[] = [];
    const run = (id: string, stop: AbortController) =>
      new LeaderElector({
        store,
        identity: id,
        ...periods,
        onEvent: (e) => void (e.type === 'waiting' && waited.push(id)),
      }).run(stop.signal, async (signal) => {
        leading.push(id);
        await new Promise((resolve) => signal.addEventListener('abort', resolve));
        leading.push(`${id} stopped`);
      });
    const a = new AbortController();
    const b = new AbortController();
    const runs = [run('a', a), run('b', b)];
    // the other candidate found the lease held three times: it had its chances to lead
    while (leading.length === 0 || waited.filter((id) => id !== leading[0]).length < 3) await sleep(20);
    assert.equal(leading.length, 1, 'exactly one leads');
    const first = leading[0] as string;
    const second = first === 'a' ? 'b' : 'a';
    (first === 'a' ? a : b).abort();
    while (leading.length < 3) await sleep(20);
    assert.deepEqual(leading, [first, `${first} stopped`, second]);
    // The leader released the lease (no holder) before the other took it: no waiting out a lease.
    assert.deepEqual(
      store.writes.filter((w, i, all) => w !== all[i - 1]),
      [first, '', second],
    );
    (first === 'a' ? b : a).abort();
    await Promise.all(runs);
    assert.equal(store.current?.spec?.holderIdentity, '');
  });

  test('a leader cut off from the Lease stops leading before another replica can take it', async () => {
    // a leads, then loses the API server (b still reaches it). a must stop within the renew
    // deadline, i.e. before the lease expires for b: never two leaders. Everything is recorded
    // here and asserted after the run (an assertion inside `lead` would be swallowed).
    const store = new MemoryLease();
    let cut = false;
    const stop = new AbortController();
    const lost: string[] = [];
    const a = new LeaderElector({
      store: partitioned(store, () => cut),
      identity: 'a',
      ...periods,
      onEvent: (e) => void (e.type === 'lost' && lost.push(e.reason)),
    });
    let aSignals: { leading: AbortSignal; deposed: AbortSignal } | undefined;
    const aLeads = Promise.withResolvers<void>();
    const runA = a.run(stop.signal, async (leading, deposed) => {
      aSignals = { leading, deposed };
      cut = true;
      aLeads.resolve();
      await aborted(leading);
    });
    await within(aLeads.promise, BOUND_MS, 'leadership for a');
    let atTakeover: { leading: boolean; deposed: boolean; isLeader: boolean } | undefined;
    const bLeads = Promise.withResolvers<void>();
    const runB = new LeaderElector({ store, identity: 'b', ...periods }).run(stop.signal, async (leading) => {
      atTakeover = {
        leading: aSignals?.leading.aborted === true,
        deposed: aSignals?.deposed.aborted === true,
        isLeader: a.isLeader,
      };
      bLeads.resolve();
      await aborted(leading);
    });
    // Only once b holds the lease (a's lease expired for b) does the test shut both down.
    const took = await within(bLeads.promise, BOUND_MS, 'takeover by b').then(
      () => true,
      (error: unknown) => error,
    );
    stop.abort();
    await Promise.all([runA, runB]);
    if (took !== true) throw took;
    assert.deepEqual(
      atTakeover,
      { leading: true, deposed: true, isLeader: false },
      'a had stopped leading (both signals aborted) when b took the lease',
    );
    const reason = `lease not renewed within ${periods.renewDeadlineMs} ms`;
    assert.equal((aSignals?.deposed.reason as Error | undefined)?.message, reason);
    assert.deepEqual(lost, [reason]);
  });

  test('client-go validation of the periods', () => {
    assert.throws(
      () =>
        new LeaderElector({
          store: new MemoryLease(),
          identity: 'a',
          leaseDurationMs: 10,
          renewDeadlineMs: 10,
        }),
      /leaseDuration/,
    );
    assert.throws(
      () =>
        new LeaderElector({
          store: new MemoryLease(),
          identity: 'a',
          leaseDurationMs: 20_000,
          renewDeadlineMs: 2_000,
          retryPeriodMs: 2_000,
        }),
      /retryPeriod/,
    );
  });
});
