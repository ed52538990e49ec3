/**
 * Block claims and releases as the watches show them, for the counters
 * `blockipam_ipam_block_claims_total` / `_releases_total`: the blocks' affinities of one pass
 * against the last. A claim = a block that gained an affinity (created affine, or an unowned one
 * taken); a release = a block that lost it (deleted, or made unowned); a changed affinity is
 * both. Whoever wrote it — agent, plugin, controller — is counted once. A block claimed and
 * released between two passes (1 s debounce) is missed; the first pass of a leader only seeds.
 */
import { POOL_LABEL } from 'blockipam/core';
import type { IPAMBlock } from 'blockipam/core';

export interface BlockChurn {
  /** The pool of each claim seen. */
  claims: string[];
  /** The pool of each release seen. */
  releases: string[];
}

export class BlockAffinities {
  #last: Map<string, { pool: string; affinity: string | null }> | undefined;

  /** Compares `blocks` with the last call's; the first call returns nothing. */
  observe(blocks: readonly IPAMBlock[]): BlockChurn {
    const next = new Map(
      blocks.map((b) => [
        b.metadata.name,
        { pool: b.metadata.labels?.[POOL_LABEL] ?? '', affinity: b.spec.affinity },
      ]),
    );
    const last = this.#last;
    this.#last = next;
    const churn: BlockChurn = { claims: [], releases: [] };
    if (!last) return churn;
    for (const [name, now] of next) {
      const before = last.get(name);
      if (now.affinity !== null && now.affinity !== before?.affinity) churn.claims.push(now.pool);
      if (before?.affinity != null && before.affinity !== now.affinity) churn.releases.push(before.pool);
    }
    for (const [name, before] of last)
      if (!next.has(name) && before.affinity !== null) churn.releases.push(before.pool);
    return churn;
  }
}
