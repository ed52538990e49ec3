/**
 * The lock hand-off (docs/design-plugin.md §Host lock, "Hand-off"): what the last holder of the
 * host lock knew of its node's blocks when it released — the node's affine-block list after its
 * own writes, each block as the API server returned it (with its new resourceVersion). Written
 * under the lock, just before the release, to `<lockFile>.handoff.json`; read under the lock by
 * the next holder, so a burst of ADDs or DELs on one node sends one UPDATE per call instead of
 * LIST + UPDATE. Staleness is safe: every write is a compare-and-swap, so a block another writer
 * (the agent, the controller, a borrowing node) changed since costs one conflict and a re-read.
 *
 * Never throws: an absent, unreadable, corrupt, old or foreign file is no hand-off.
 */
import { readFileSync, unlinkSync } from 'node:fs';
import type { IPAMBlock } from 'blockipam/core';
import { writeFileAtomic } from './atomic-file.ts';

/**
 * 5 s: a hand-off serves the holder right after the one that wrote it (a burst: it is
 * milliseconds old). Older, the node's blocks have likely moved on, and a read is cheaper than a
 * conflict plus a read.
 */
export const handoffMaxAgeMs = 5_000;

/** The hand-off's file: next to the lock file it belongs to. */
export const handoffFileOf = (lockFile: string): string => `${lockFile}.handoff.json`;

interface HandoffDocument {
  readonly version: 1;
  /** Which cluster (the plugin's cache key: API server URL + kubeconfig path). */
  readonly cluster: string;
  readonly node: string;
  /** Written at, ms since the epoch. */
  readonly at: number;
  readonly blocks: readonly IPAMBlock[];
}

export interface HandoffScope {
  readonly file: string;
  readonly cluster: string;
  readonly node: string;
}

/** The node's blocks the last holder handed off, or undefined. @param nowMs default Date.now() */
export function readHandoff(scope: HandoffScope, nowMs = Date.now()): IPAMBlock[] | undefined {
  let doc: Partial<HandoffDocument>;
  try {
    doc = JSON.parse(readFileSync(scope.file, 'utf8')) as Partial<HandoffDocument>;
  } catch {
    return undefined;
  }
  if (doc.version !== 1 || doc.cluster !== scope.cluster || doc.node !== scope.node) return undefined;
  if (typeof doc.at !== 'number' || nowMs - doc.at > handoffMaxAgeMs || doc.at > nowMs + 1_000)
    return undefined;
  const blocks: unknown = doc.blocks;
  if (!Array.isArray(blocks)) return undefined;
  const ok = (blocks as (Partial<IPAMBlock> | null)[]).every(
    (b: Partial<IPAMBlock> | null) =>
      typeof b?.metadata?.name === 'string' &&
      typeof b.metadata.resourceVersion === 'string' &&
      typeof b.spec?.cidr === 'string' &&
      typeof b.spec.allocations === 'object',
  );
  return ok ? (blocks as IPAMBlock[]) : undefined;
}

/** Writes the hand-off (atomically); a failure only costs the next holder a read. */
export function writeHandoff(scope: HandoffScope, blocks: readonly IPAMBlock[], nowMs = Date.now()): void {
  const doc: HandoffDocument = { version: 1, cluster: scope.cluster, node: scope.node, at: nowMs, blocks };
  try {
    writeFileAtomic(scope.file, JSON.stringify(doc), 0o600);
  } catch {
    dropHandoff(scope);
  }
}

/** Removes the hand-off (a holder that wrote blocks without knowing the node's full list). */
export function dropHandoff(scope: HandoffScope): void {
  try {
    unlinkSync(scope.file);
  } catch {
    // absent already, or not ours to remove: the next holder's checks reject it anyway
  }
}
