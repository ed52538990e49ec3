/**
 * Skipped routes made visible (docs/design-agent.md §Routes, "Skipped routes"): every pass plans
 * the same skips again, so the loop tells the operator only what changed — a group of skips that
 * appeared or changed (a `warn` line naming the node, the reason, the family and the blocks) and
 * one that went away (`info`) — and the metric carries the current counts by family and reason
 * (bounded labels: no other node's name). Pure but for the reporter's memory of the last pass.
 */
import { noInternalIPMessage, parseCidr } from 'blockipam/core';
import type { IPFamily } from 'blockipam/core';
import type { SkippedRoute } from './types.ts';

/** Skips of one node, reason and family: one log line. */
export interface SkipGroup {
  /** The node the skipped routes lead to (this node for its own blocks' skips). */
  readonly node: string;
  readonly reason: SkippedRoute['why'];
  /** Undefined for a destination that is no CIDR (`invalid-cidr`). */
  readonly family: IPFamily | undefined;
  /** The destinations, sorted. */
  readonly dsts: readonly string[];
  /** IPAMBlock names among them (a borrowed address names none), sorted. */
  readonly blocks: readonly string[];
}

/** Names a log line lists at most; the rest are counted (a node of 1,000 blocks is one line). */
export const MAX_LISTED = 10;

const familyOf = (dst: string): IPFamily | undefined => parseCidr(dst, { strict: false })?.family;
const keyOf = (g: Pick<SkipGroup, 'node' | 'reason' | 'family'>): string =>
  `${g.node}\u0000${g.reason}\u0000${g.family ?? ''}`;

/** The skips grouped by node, reason and family, by key. */
function groupSkips(skipped: readonly SkippedRoute[]): Map<string, SkipGroup> {
  const groups = new Map<
    string,
    {
      node: string;
      reason: SkippedRoute['why'];
      family: IPFamily | undefined;
      dsts: string[];
      blocks: string[];
    }
  >();
  for (const s of skipped) {
    const family = familyOf(s.dst);
    const key = keyOf({ node: s.node, reason: s.why, family });
    const g = groups.get(key) ?? { node: s.node, reason: s.why, family, dsts: [], blocks: [] };
    g.dsts.push(s.dst);
    if (s.block !== '') g.blocks.push(s.block);
    groups.set(key, g);
  }
  for (const g of groups.values()) {
    g.dsts.sort();
    g.blocks = [...new Set(g.blocks)].sort();
  }
  return groups;
}

/** Current skips by the metric's labels: family ("4", "6", "unknown") and reason. */
export function skipCounts(
  skipped: readonly SkippedRoute[],
): { family: string; reason: string; count: number }[] {
  const counts = new Map<string, { family: string; reason: string; count: number }>();
  for (const s of skipped) {
    const family = String(familyOf(s.dst) ?? 'unknown');
    const key = `${family}\u0000${s.why}`;
    const c = counts.get(key) ?? { family, reason: s.why, count: 0 };
    c.count += 1;
    counts.set(key, c);
  }
  return [...counts.values()];
}

/** The log line of a group that appeared or changed: message and fields. */
export function skipLine(g: SkipGroup): { message: string; fields: Record<string, unknown> } {
  const listed = (names: readonly string[]): string =>
    names.length <= MAX_LISTED
      ? names.join(', ')
      : `${names.slice(0, MAX_LISTED).join(', ')} and ${names.length - MAX_LISTED} more`;
  const fields = {
    routeNode: g.node,
    reason: g.reason,
    family: g.family === undefined ? 'unknown' : `IPv${g.family}`,
    routes: g.dsts.length,
    blocks: listed(g.blocks),
    ...(g.blocks.length < g.dsts.length ? { destinations: listed(g.dsts) } : {}),
  };
  const message =
    g.reason === 'no-internal-ip' && g.family !== undefined
      ? `routes skipped: ${noInternalIPMessage(g.node, g.family)}`
      : `routes skipped (${g.reason})`;
  return { message, fields };
}

/** Remembers the last pass's groups; {@link changes} gives what a new pass changed. */
export class SkipReporter {
  #last = new Map<string, SkipGroup>();

  /**
   * The groups of `skipped` that are new or whose destinations changed since the last call
   * (`appeared`), and the last call's groups that are gone (`resolved`). An unchanged pass gives
   * two empty lists: nothing is logged again.
   */
  changes(skipped: readonly SkippedRoute[]): { appeared: SkipGroup[]; resolved: SkipGroup[] } {
    const now = groupSkips(skipped);
    const appeared = [...now].flatMap(([key, g]) => {
      const before = this.#last.get(key);
      return before && before.dsts.join('\n') === g.dsts.join('\n') ? [] : [g];
    });
    const resolved = [...this.#last].flatMap(([key, g]) => (now.has(key) ? [] : [g]));
    this.#last = now;
    return { appeared, resolved };
  }
}
