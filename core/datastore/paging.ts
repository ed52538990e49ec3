/**
 * Every object of a paged LIST, page after page (Kubernetes `limit` + `continue`): one
 * consistent view — all pages are served at the first page's resourceVersion — without one
 * huge answer (a page of 500 full /26 blocks stays a few MB; one LIST of 20,000 pods would not).
 */
import { isExpired } from '../errors/expired.ts';
import type { LabelSelector } from '../resources.ts';
import type { Page, PageOptions } from './datastore.ts';

/**
 * 500 objects per page: kubectl's own chunk size (`--chunk-size` default), a few MB of full /26
 * blocks; the API server's continue token lives until etcd compacts (5 min by default), far
 * longer than a page takes.
 */
const DEFAULT_PAGE_SIZE = 500;
/**
 * 2 attempts: when the continue token expired mid-list (ExpiredError, 410) the LIST starts over
 * once; a second expiry means pages take longer than compaction allows, and retrying would not help.
 */
const LIST_ATTEMPTS = 2;

/** Options of {@link listAll}. */
export interface ListAllOptions {
  /** Objects per page; default {@link DEFAULT_PAGE_SIZE}. */
  limit?: number;
  labelSelector?: LabelSelector;
  signal?: AbortSignal;
  /** Told after each page: how many objects were read so far in this attempt. */
  onPage?: (count: number) => void;
}

/**
 * Reads every page of a LIST through `listPage` (a store's `listPage`, or the Datastore's
 * `listPodPage` / `listNodePage`), one page ahead: page n+1 is asked for as soon as page n's
 * continue token is known (`PageOptions.onContinue`, before page n is decoded), so the server
 * serves it while the client decodes page n; a store that tells the token only with the page is
 * read page after page. At most two pages are in flight. A continue token that expired
 * (ExpiredError) restarts the LIST from its first page, once.
 * @returns the objects, in the store's order, and the LIST's resourceVersion
 * @throws ExpiredError when it expires twice; any error of `listPage`
 */
export async function listAll<T, O extends PageOptions = PageOptions>(
  listPage: (options: O) => Promise<Page<T>>,
  options: ListAllOptions & Omit<O, keyof PageOptions> = {} as ListAllOptions & Omit<O, keyof PageOptions>,
): Promise<{ items: T[]; resourceVersion: string }> {
  const { limit = DEFAULT_PAGE_SIZE, onPage, ...rest } = options;
  const request = (token: string | undefined): PendingPage<T> =>
    pendingPage((onContinue) =>
      listPage({ ...rest, limit, ...(token ? { continue: token } : {}), onContinue } as O),
    );
  for (let attempt = 1; ; attempt++) {
    const items: T[] = [];
    let resourceVersion: string | undefined;
    let current: PendingPage<T> | undefined = request(undefined);
    let next: PendingPage<T> | undefined;
    try {
      while (current) {
        const token: string | undefined = await current.token;
        next = token ? request(token) : undefined;
        const page: Page<T> = await current.page;
        resourceVersion ??= page.resourceVersion;
        for (const item of page.items) items.push(item);
        onPage?.(items.length);
        current = next;
        next = undefined;
      }
      return { items, resourceVersion: resourceVersion ?? '' };
    } catch (error) {
      // The page asked for ahead is abandoned; its own failure, if any, must not go unhandled.
      next?.page.catch(() => undefined);
      if (!isExpired(error) || attempt >= LIST_ATTEMPTS) throw error;
    }
  }
}

/** A page asked for: its continue token (early when the store tells it) and the page. */
interface PendingPage<T> {
  token: Promise<string | undefined>;
  page: Promise<Page<T>>;
}

function pendingPage<T>(
  send: (onContinue: (token: string | undefined) => void) => Promise<Page<T>>,
): PendingPage<T> {
  let tell: (token: string | undefined) => void = () => undefined;
  const early = new Promise<string | undefined>((resolve) => (tell = resolve));
  const page = send((token) => tell(token));
  // Whichever comes first: the early token, or the page (whose own token is authoritative when
  // the store never told it; a failed page fails `token` too).
  const token = Promise.race([early, page.then((p) => p.continue)]);
  token.catch(() => undefined);
  return { token, page };
}
