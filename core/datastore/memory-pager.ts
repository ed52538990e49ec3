/**
 * Paged LISTs for the memory datastore, with the API server's semantics (proved by the contract
 * suite): the first page takes a snapshot of the selected objects at the current
 * resourceVersion, every later page is cut from that snapshot, so objects created, changed or
 * deleted after the first page do not show in the later pages; every page carries the first
 * page's resourceVersion; only a missing `continue` ends the list. A token may be used again
 * (the API server's tokens are stateless too).
 *
 * Expiry: the API server answers 410 Expired once etcd has compacted the token's
 * resourceVersion. Here a snapshot lives until {@link MemoryPager.compact} (a test's "etcd
 * compaction") or until {@link MAX_SNAPSHOTS} newer paged LISTs have started; its tokens are
 * then ExpiredError. A token that is not one of ours is InvalidError (400, as the API server's
 * "continue key is not valid").
 */
import { ExpiredError } from '../errors/expired.ts';
import { InvalidError } from '../errors/invalid.ts';
import type { Page, PageOptions } from './datastore.ts';

/**
 * 64 snapshots: a long-lived memory store (a simulation) doing paged LISTs forever must not keep
 * every snapshot; 64 LISTs in flight at once is far more than any caller pages concurrently.
 */
const MAX_SNAPSHOTS = 64;

const TOKEN = /^memory:(\d+):(\d+)$/;

interface Snapshot {
  resourceVersion: string;
  items: readonly unknown[];
}

export class MemoryPager {
  readonly #snapshots = new Map<number, Snapshot>();
  #nextId = 1;

  /**
   * One page. `select` gives the selected objects in list order and the current resourceVersion
   * (called for a first page only); objects are copied on the way out.
   * @param what the request, for errors, e.g. "LIST ipamblocks"
   * @throws InvalidError for a limit that is not an integer ≥ 1 or a token not ours;
   *   ExpiredError for a token whose snapshot is gone
   */
  page<T>(
    what: string,
    options: PageOptions,
    select: () => { items: readonly T[]; resourceVersion: string },
  ): Page<T> {
    const { limit } = options;
    if (!Number.isInteger(limit) || limit < 1)
      throw new InvalidError(`${what}: limit: Invalid value: ${limit}: must be an integer ≥ 1`, 400);
    let id: number;
    let offset: number;
    let snapshot: Snapshot | undefined;
    if (options.continue === undefined) {
      snapshot = select();
      id = this.#nextId++;
      offset = 0;
    } else {
      const match = TOKEN.exec(options.continue);
      if (!match) throw new InvalidError(`${what}: continue key is not valid: ${options.continue}`, 400);
      id = Number(match[1]);
      offset = Number(match[2]);
      snapshot = this.#snapshots.get(id);
      if (!snapshot)
        throw new ExpiredError(
          what,
          `${what}: HTTP 410: The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.`,
        );
    }
    const end = offset + limit;
    const more = end < snapshot.items.length;
    if (more && !this.#snapshots.has(id)) this.#keep(id, snapshot);
    const token = more ? `memory:${id}:${end}` : undefined;
    options.onContinue?.(token); // known before the objects are copied, as the API server's head
    return {
      items: structuredClone(snapshot.items.slice(offset, end) as T[]),
      resourceVersion: snapshot.resourceVersion,
      ...(token ? { continue: token } : {}),
    };
  }

  /** Drops every snapshot, as etcd compaction does: every outstanding token is now expired. */
  compact(): void {
    this.#snapshots.clear();
  }

  #keep(id: number, snapshot: Snapshot): void {
    this.#snapshots.set(id, snapshot);
    if (this.#snapshots.size > MAX_SNAPSHOTS) {
      const oldest = this.#snapshots.keys().next().value;
      if (oldest !== undefined) this.#snapshots.delete(oldest);
    }
  }
}
