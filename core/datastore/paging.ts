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
export const DEFAULT_PAGE_SIZE = 500;
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
 * `listPodPage` / `listNodePage`). A continue token that expired (ExpiredError) restarts the
 * LIST from its first page, once.
 * @returns the objects, in the store's order, and the LIST's resourceVersion
 * @throws ExpiredError when it expires twice; any error of `listPage`
 */
export async function listAll<T, O extends PageOptions = PageOptions>(
  listPage: (options: O) => Promise<Page<T>>,
  options: ListAllOptions & Omit<O, keyof PageOptions> = {} as ListAllOptions & Omit<O, keyof PageOptions>,
): Promise<{ items: T[]; resourceVersion: string }> {
  const { limit = DEFAULT_PAGE_SIZE, onPage, ...rest } = options;
  for (let attempt = 1; ; attempt++) {
    const items: T[] = [];
    let token: string | undefined;
    let resourceVersion: string | undefined;
    try {
      do {
        const page = await listPage({ ...rest, limit, ...(token ? { continue: token } : {}) } as O);
        resourceVersion ??= page.resourceVersion;
        items.push(...page.items);
        token = page.continue;
        onPage?.(items.length);
      } while (token);
      return { items, resourceVersion: resourceVersion ?? '' };
    } catch (error) {
      if (!isExpired(error) || attempt >= LIST_ATTEMPTS) throw error;
    }
  }
}
