/**
 * The agent's report of the blocks its route planner ignores (docs/design-agent.md "Routes"):
 * a log line per change of (block, reason) — never one per pass — and the gauge
 * `blockipam_agent_ignored_blocks{node,reason}`, whose reasons are a fixed set (core's
 * DISTRUST_REASONS and `covers-node-address`), so its series stay bounded whatever the cluster
 * holds. The planner stays pure; this sits beside it and reads a pass's `skipped`.
 */
import { DISTRUST_REASONS } from 'blockipam/core';
import type { SkippedRoute } from './types.ts';

/** Skip reasons that refuse a whole block (the others concern one route's next hop). */
export const BLOCK_REFUSALS: readonly SkippedRoute['why'][] = [...DISTRUST_REASONS, 'covers-node-address'];

/** The log levels used; a winston Logger fits. */
export interface IgnoredLog {
  info(message: string, meta?: Record<string, unknown>): unknown;
  warn(message: string, meta?: Record<string, unknown>): unknown;
}

/** A prom-client Gauge<'node' | 'reason'> fits. */
export interface IgnoredGauge {
  set(labels: { node: string; reason: string }, value: number): void;
}

export class IgnoredBlocks {
  readonly #node: string;
  readonly #log: IgnoredLog;
  readonly #gauge: IgnoredGauge | undefined;
  /** block name → reason, as last reported. */
  #last = new Map<string, SkippedRoute['why']>();

  constructor(options: { node: string; log: IgnoredLog; gauge?: IgnoredGauge }) {
    this.#node = options.node;
    this.#log = options.log;
    this.#gauge = options.gauge;
  }

  /** Takes one pass's skipped routes: logs what changed since the last pass, sets the gauge. */
  report(skipped: readonly SkippedRoute[]): void {
    const now = new Map<string, SkippedRoute>();
    for (const s of skipped) if (BLOCK_REFUSALS.includes(s.why)) now.set(s.block, s);
    for (const [block, s] of now) {
      if (this.#last.get(block) === s.why) continue;
      this.#log.warn('block ignored: no route for it or its borrowed addresses', {
        block,
        cidr: s.dst,
        affinity: s.node,
        reason: s.why,
        ...(s.message ? { detail: s.message } : {}),
      });
    }
    for (const [block, why] of this.#last)
      if (!now.has(block))
        this.#log.info('block no longer ignored (trusted again, or gone)', { block, was: why });
    this.#last = new Map([...now].map(([block, s]) => [block, s.why]));
    const counts = new Map<string, number>(BLOCK_REFUSALS.map((why) => [why, 0]));
    for (const why of this.#last.values()) counts.set(why, (counts.get(why) ?? 0) + 1);
    for (const [reason, value] of counts) this.#gauge?.set({ node: this.#node, reason }, value);
  }
}
