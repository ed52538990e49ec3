// core's listAll reads one page ahead: page n+1 is asked for as soon as page n's continue token
// is told (PageOptions.onContinue), before page n resolves, with at most two pages in flight; a
// store that never tells the token early is read page after page; a continue token that expires
// on the page asked ahead restarts the LIST once; a failure of either page fails the LIST with
// nothing left unhandled. A scripted store: every page resolves only when the test lets it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ExpiredError, listAll } from 'blockipam/core';
import type { Page, PageOptions } from 'blockipam/core';

/** A store of `count` numbers, pages cut by offset (token "rv:offset"), its calls recorded. */
function scriptedStore(count: number, options: { early: boolean }) {
  const events: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  let rv = 1;
  /** Called with the request's offset before it resolves; may throw to fail that page. */
  let hook: (offset: number, attemptRv: number) => void = () => undefined;
  const listPage = async (o: PageOptions): Promise<Page<number>> => {
    const [tokenRv, offsetText] = (o.continue ?? `${rv}:0`).split(':');
    const offset = Number(offsetText);
    events.push(`ask ${offset}`);
    inFlight += 1;
    maxInFlight = Math.max(maxInFlight, inFlight);
    try {
      await new Promise((resolve) => setImmediate(resolve));
      hook(offset, Number(tokenRv));
      if (Number(tokenRv) !== rv) throw new ExpiredError('LIST numbers', 'HTTP 410: too old');
      const end = Math.min(offset + o.limit, count);
      const token = end < count ? `${rv}:${end}` : undefined;
      if (options.early) o.onContinue?.(token);
      // the page's decoding: two turns of the event loop after its token was told
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      events.push(`got ${offset}`);
      return {
        items: Array.from({ length: end - offset }, (_, i) => offset + i),
        resourceVersion: String(rv),
        ...(token ? { continue: token } : {}),
      };
    } finally {
      inFlight -= 1;
    }
  };
  return {
    listPage,
    events,
    maxInFlight: () => maxInFlight,
    compact: () => (rv += 1),
    setHook: (h: typeof hook) => (hook = h),
  };
}

const all = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

describe('listAll, one page ahead', () => {
  it('asks for page n+1 once page n told its token, before page n resolved; two pages at most in flight', async () => {
    const store = scriptedStore(10, { early: true });
    const got = await listAll(store.listPage, { limit: 3 });
    assert.deepEqual(got.items, all(10));
    assert.equal(got.resourceVersion, '1');
    assert.ok(store.events.indexOf('ask 3') < store.events.indexOf('got 0'), store.events.join(', '));
    assert.ok(store.events.indexOf('ask 6') < store.events.indexOf('got 3'), store.events.join(', '));
    assert.ok(store.events.indexOf('ask 6') > store.events.indexOf('got 0'), 'never two pages ahead');
    assert.equal(store.maxInFlight(), 2);
    assert.equal(store.events.filter((e) => e.startsWith('ask')).length, 4);
  });

  it('a store that never tells the token early is read page after page', async () => {
    const store = scriptedStore(10, { early: false });
    const progress: number[] = [];
    const got = await listAll(store.listPage, { limit: 3, onPage: (n) => progress.push(n) });
    assert.deepEqual(got.items, all(10));
    assert.deepEqual(progress, [3, 6, 9, 10]);
    assert.equal(store.maxInFlight(), 1);
  });

  it('an expiry (410) on the page asked ahead restarts the LIST once, at the new resourceVersion', async () => {
    const store = scriptedStore(10, { early: true });
    let compacted = false;
    store.setHook((offset) => {
      if (offset === 6 && !compacted) {
        compacted = true;
        store.compact(); // etcd compacted past the first attempt's resourceVersion
      }
    });
    const got = await listAll(store.listPage, { limit: 3 });
    assert.deepEqual(got.items, all(10), 'each object once: the first attempt is dropped');
    assert.equal(got.resourceVersion, '2');
    assert.deepEqual(
      store.events.filter((e) => e.startsWith('ask')),
      ['ask 0', 'ask 3', 'ask 6', 'ask 0', 'ask 3', 'ask 6', 'ask 9'],
    );
  });

  it('a second expiry is thrown', async () => {
    const store = scriptedStore(10, { early: true });
    store.setHook((offset) => {
      if (offset === 3) store.compact();
    });
    await assert.rejects(listAll(store.listPage, { limit: 3 }), (e: Error) => e.name === 'ExpiredError');
  });

  it('a failing page fails the LIST while the page asked ahead is in flight, and its failure is handled', async () => {
    const store = scriptedStore(10, { early: true });
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      // page 0 told its token (page 3 is asked for), then page 3 fails while page 0 is decoded
      store.setHook((offset) => {
        if (offset === 3) throw new Error('boom at 3');
      });
      await assert.rejects(listAll(store.listPage, { limit: 3 }), /boom at 3/);
      await new Promise((resolve) => setTimeout(resolve, 10));
      assert.deepEqual(unhandled, []);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
